"""`holodesk report`: the page's markup, then the page as headless Chromium renders it."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from holodesk.client.cli import main
from holodesk.client.exit_codes import ExitCode
from holodesk.data.report import render_report
from holodesk.data.report_overlay import CLICK_COLOR, DRAG_COLOR, SCROLL_COLOR
from holodesk.data.stepview import LoadedRecording

from .recordings import RecordingSpec, StepSpec, click, completion, done, type_text, write_recording

TASK = 'Find <script>window.pwned = 1</script> & report "it" — ünïcode'
THOUGHT = "The </p><img src=x onerror=alert(1)> button"
RAW = '{"thought": "<b>raw</b>", "action": {"action": "click"}}'
GRAY = (200, 200, 200)
BLUE = (40, 80, 160)
FRAME = (800, 500)
CLICK_AT = (200.0, 120.0)
DRAG_FROM, DRAG_TO = (100.0, 300.0), (700.0, 300.0)
SCROLL_AT = (600.0, 100.0)


def rgb(hex_color: str) -> tuple[int, int, int]:
    value = hex_color.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    def point(xy: tuple[float, float]) -> dict[str, float]:
        return {"x": xy[0], "y": xy[1]}

    return write_recording(
        tmp_path / "recordings",
        RecordingSpec(
            session_id="s-report",
            task=TASK,
            answer="42 <i>items</i>",
            reward=0.75,
            success=True,
            frame_size=FRAME,
            steps=[
                StepSpec(
                    [click("c1", "f1", *CLICK_AT), type_text("t1", "<b>typed</b>")],
                    thought=THOUGHT,
                    completions=[completion(RAW, [-0.5])],
                    color=GRAY,
                ),
                StepSpec(
                    [
                        {
                            "action_id": "d1",
                            "frame_id": "f2",
                            "drag": {"path": [point(DRAG_FROM), point(DRAG_TO)]},
                        },
                        {
                            "action_id": "s1",
                            "frame_id": "f2",
                            "scroll": {"point": point(SCROLL_AT), "dy": 3},
                        },
                    ],
                    results=[
                        {"action_id": "d1", "status": "ACTION_STATUS_OK", "duration_ms": 300},
                        {
                            "action_id": "s1",
                            "status": "ACTION_STATUS_FAILED",
                            "error": "no <wheel> here",
                        },
                    ],
                    color=BLUE,
                ),
                StepSpec([done("x1", "42 items")], color=GRAY),
            ],
        ),
    )


class Markup(HTMLParser):
    """Every start tag with its attributes, and the text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Markup:
    markup = Markup()
    markup.feed(page)
    return markup


def test_the_page_is_self_contained_and_escapes_everything(recording: Path) -> None:
    page = render_report(LoadedRecording.load(recording))
    markup = parse(page)
    names = [tag for tag, _ in markup.tags]
    # Nothing executable and nothing fetched: no script, no link, every image a data: URI.
    assert "script" not in names
    assert "link" not in names
    assert not [
        a for tag, a in markup.tags if tag == "img" and not (a["src"] or "").startswith("data:")
    ]
    assert not [a for _, a in markup.tags if any(k.startswith("on") for k in a)]
    assert [t for t, _ in markup.tags].count("img") == 3
    text = "".join(markup.text)
    # The recorded strings come back as text, character for character.
    for shown in (TASK, THOUGHT, RAW, "42 <i>items</i>", "type “<b>typed</b>”", "no <wheel> here"):
        assert shown in text
    assert "success" in text
    assert "0.75" in text


def test_the_cli_writes_the_page_and_rejects_what_is_not_a_recording(
    recording: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "pages" / "page.html"
    assert main(["report", str(recording), "--out", str(out)]) == ExitCode.SUCCEEDED
    assert capsys.readouterr().out.strip() == str(out)
    assert "<!DOCTYPE html>" in out.read_text(encoding="utf-8")
    # Without --out: <recording id>.html next to the recording, wherever it is run from.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["report", str(recording)]) == ExitCode.SUCCEEDED
    assert (recording.parent / f"{recording.name}.html").is_file()
    assert not list(elsewhere.iterdir())
    capsys.readouterr()
    assert main(["report", str(tmp_path / "nothing")]) == ExitCode.USAGE
    assert "is not a recording" in capsys.readouterr().err


def test_smaller_embedded_images_keep_the_overlay_in_frame_pixels(recording: Path) -> None:
    from holodesk.data.report import ReportOptions

    page = render_report(LoadedRecording.load(recording), ReportOptions(max_image_width=400))
    markup = parse(page)
    image = next(a for tag, a in markup.tags if tag == "img")
    assert (image["src"] or "").startswith("data:image/jpeg;base64,")
    svg = next(a for tag, a in markup.tags if tag == "svg")
    assert svg["viewbox"] == f"0 0 {FRAME[0]} {FRAME[1]}"


def test_a_missing_frame_file_is_shown_as_missing(recording: Path) -> None:
    loaded = LoadedRecording.load(recording)
    loaded.frames["f2"].path.unlink()
    text = "".join(parse(render_report(loaded)).text)
    assert "is missing" in text


# -- rendered by Chromium -----------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    playwright_api = pytest.importorskip("playwright.sync_api")
    from holodesk.platform.web.browser import LAUNCH_FLAGS, find_chromium

    executable = find_chromium(None, os.environ)
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=list(LAUNCH_FLAGS))
        yield browser
        browser.close()


def screenshot(page: Any) -> Image.Image:
    return Image.open(io.BytesIO(page.screenshot(full_page=True))).convert("RGB")


def color_at(shot: Image.Image, box: dict[str, float], frame_xy: tuple[float, float]) -> Any:
    """The screenshot pixel showing frame pixel `frame_xy` of an image laid out in `box`."""
    x = box["x"] + frame_xy[0] * box["width"] / FRAME[0]
    y = box["y"] + frame_xy[1] * box["height"] / FRAME[1]
    return shot.getpixel((round(x), round(y)))


def close(actual: tuple[int, int, int], expected: tuple[int, int, int], slack: int = 40) -> bool:
    return all(abs(a - b) <= slack for a, b in zip(actual, expected, strict=True))


@pytest.mark.web
@pytest.mark.parametrize("viewport_width", [1280, 520], ids=["native-size", "shrunk-to-fit"])
def test_chromium_draws_the_markers_where_the_actions_were(
    chromium: Any, recording: Path, tmp_path: Path, viewport_width: int
) -> None:
    out = tmp_path / "page.html"
    assert main(["report", str(recording), "--out", str(out)]) == ExitCode.SUCCEEDED
    page = chromium.new_page(viewport={"width": viewport_width, "height": 900})
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(out.as_uri())
    try:
        shot = screenshot(page)
        first = page.locator("#step-1 img").bounding_box()
        second = page.locator("#step-2 img").bounding_box()
        # Shown at its own size when it fits, shrunk (overlay with it) when not.
        if viewport_width > FRAME[0]:
            assert first["width"] == pytest.approx(FRAME[0], abs=1)
        else:
            assert first["width"] < FRAME[0] - 100
        assert first["height"] == pytest.approx(first["width"] * FRAME[1] / FRAME[0], abs=1)

        assert close(color_at(shot, first, CLICK_AT), rgb(CLICK_COLOR))
        # Away from the markers the frame's own pixels show through.
        assert close(color_at(shot, first, (700, 450)), GRAY, slack=6)
        midway = ((DRAG_FROM[0] + DRAG_TO[0]) / 2, DRAG_FROM[1])
        assert close(color_at(shot, second, midway), rgb(DRAG_COLOR))
        assert close(color_at(shot, second, (midway[0], midway[1] + 40)), BLUE, slack=6)
        assert close(color_at(shot, second, SCROLL_AT), rgb(SCROLL_COLOR))

        assert page.inner_text("h1") == TASK
        assert page.evaluate("window.pwned") is None
        assert THOUGHT in page.inner_text("#step-1")
        # The raw output is collapsed until asked for.
        assert not page.locator("#step-1 details pre").first.is_visible()
        page.locator("#step-1 details summary").first.click()
        assert page.locator("#step-1 details pre").first.inner_text() == RAW
        # Only the page itself was loaded: the images are inline.
        assert [url for url in requests if not url.startswith("data:")] == [out.as_uri()]
    finally:
        page.close()
