"""One whole agent run on the web target: daemon + client + headless Chromium, no desktop.

The policy is scripted model text in the holo dialect, so it goes through the
daemon's parser and coordinate mapping, the contract, the client's frame ->
physical pixel mapping and the web backend's physical -> CSS pixel mapping, as a
model's output would. `goto` arrives as a NavigateAction and loads the page
directly. Every assertion reads what the pages themselves logged.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.cli import main as client_main
from holodesk.client.events import Outcome
from holodesk.client.exit_codes import ExitCode
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon import frame_pixels
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.platform.select import open_backend
from holodesk.platform.web.backend import WebBackend
from holodesk.platform.web.browser import WebBrowser
from tests.daemon.support import RecordingPolicy, running_daemon
from tests.support.web_site import serve_pages

pytestmark = [pytest.mark.web, pytest.mark.e2e]

CSS_SIZE = (1280, 800)
UNICODE_TEXT = "héllo wörld ñ € 日本"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve_pages(Path(tmp_path_factory.mktemp("site"))) as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[WebBrowser]:
    with WebBrowser() as shared:
        yield shared


def step(action: dict[str, Any], thought: str = "") -> str:
    return json.dumps({"note": "", "thought": thought, "action": action})


def centre_in_model_space(backend: WebBackend, element: str) -> dict[str, float]:
    """Holo2's coordinates (0-1000 of the image) of an element's centre."""
    box = backend.page.evaluate(
        "id => { const r = document.getElementById(id).getBoundingClientRect();"
        " return [r.x + r.width / 2, r.y + r.height / 2]; }",
        element,
    )
    return {"x": box[0] / CSS_SIZE[0] * 1000, "y": box[1] / CSS_SIZE[1] * 1000}


@pytest.mark.parametrize("scale", [1, 2])
async def test_scripted_run_clicks_types_and_navigates_a_page(
    browser: WebBrowser, site: str, scale: int
) -> None:
    backend = open_backend(
        "web",
        browser=browser,
        url=f"{site}/events.html",
        width=CSS_SIZE[0],
        height=CSS_SIZE[1],
        device_scale_factor=scale,
    )
    assert isinstance(backend, WebBackend)
    outputs = [
        step(
            {"action": "click_element", "element": "Go", **centre_in_model_space(backend, "go")},
            "press Go",
        ),
        step(
            {
                "action": "write_element_abs",
                "element": "the field",
                "content": UNICODE_TEXT,
                **centre_in_model_space(backend, "field"),
            },
            "type into the field",
        ),
        step({"action": "goto", "url": f"{site}/second.html"}, "open the second page"),
        step({"action": "answer", "content": "second page reached"}),
    ]
    policy = ModelPolicy(get_dialect("holo"), ScriptedEngine(outputs), name="scripted")
    try:
        async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
            outcome = await run_session(
                running.address, "click, type, navigate", backend, SessionOptions()
            )

        assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
        assert outcome.answer == "second page reached"
        assert outcome.steps == 4
        assert backend.navigator is not None
        assert backend.navigator.current_url() == f"{site}/second.html"
        # The first page's log, kept in sessionStorage across the navigation.
        logged = backend.page.evaluate("window.events")
        first = [e for e in logged if e["page"] == "/events.html"]
        clicks = [e["target"] for e in first if e["type"] == "click"]
        assert clicks == ["go", "field"]
        typed = [e for e in first if e["type"] == "input"]
        assert [(e["target"], e["data"]) for e in typed] == [("field", UNICODE_TEXT)]
        # Navigation loaded the page directly: no address-bar keystrokes reached a page.
        assert not [e for e in logged if e["type"] == "keydown" and e["key"] in ("l", "Enter")]
    finally:
        backend.close()


async def test_holodesk_run_opens_the_page_its_url_names(tmp_path: Path) -> None:
    """`holodesk run --backend web --url URL` starts the task on that page: the first
    screen the daemon sees is the page (a solid colour here), not a blank tab."""
    page = tmp_path / "start.html"
    page.write_text("<html><body style='margin:0;background:#1e6e3c'></body></html>")
    policy = RecordingPolicy([step({"action": "answer", "content": "seen"})])
    async with running_daemon([policy]) as daemon:
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "holodesk.client", "run"),
            *("--server", daemon.running.address, "--backend", "web"),
            *("--url", page.as_uri(), "--no-estop", "--no-fail-safe", "look"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, output.decode()
    first = frame_pixels.decode(policy.contexts[0].frame).convert("RGB")
    assert first.getpixel((first.width // 2, first.height // 2)) == (0x1E, 0x6E, 0x3C)


def test_url_is_refused_for_a_backend_without_pages(capsys: pytest.CaptureFixture[str]) -> None:
    code = client_main(["run", "--server", "127.0.0.1:1", "--backend", "fake", "--url", "x", "t"])
    assert code == ExitCode.USAGE
    assert "--url is for the web backend" in capsys.readouterr().err
