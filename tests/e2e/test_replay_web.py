"""Replay on the web target: record a session on a page in headless Chromium, replay it.

Real daemon (recording to disk), scripted model policy in the holo dialect, the
client's run_session on the web backend, then `holodesk replay --backend web
--url ...` in a browser of its own: the same page matches; a page whose panel
has another colour mismatches at the step that shows the panel.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.cli import main
from holodesk.client.events import Outcome
from holodesk.client.exit_codes import ExitCode
from holodesk.client.replay.runner import Replayer, ReplaySettings
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.data.stepview import LoadedRecording, find_recordings
from holodesk.platform.select import open_backend
from holodesk.platform.web.browser import WebBrowser
from tests.support.web_site import serve_pages

pytestmark = [pytest.mark.web, pytest.mark.e2e]

CSS_SIZE = (1280, 800)
NAME = (20 + 150, 20 + 20)
GREET = (340 + 60, 20 + 20)


def greet_page(accent: str) -> str:
    # No caret blinking, no hover look: nothing changes unless an action changes it.
    return f"""<!doctype html><html><head><meta charset="utf-8"><style>
body{{margin:0;font:18px sans-serif;background:#f0f0f0}}
input{{position:absolute;left:20px;top:20px;width:300px;height:40px;caret-color:transparent;
  outline:none;border:1px solid #888;font:18px sans-serif}}
button{{position:absolute;left:340px;top:20px;width:120px;height:40px;border:0;
  background:#d0d0d0;font:18px sans-serif}}
#panel{{position:absolute;left:20px;top:90px;width:520px;height:240px;display:none;
  background:{accent};color:#fff;text-align:center;line-height:240px}}
</style></head><body>
<input id="name"><button id="greet" onclick="
  const p = document.getElementById('panel');
  p.textContent = 'Hello, ' + document.getElementById('name').value + '!';
  p.style.display = 'block';">Greet</button><div id="panel"></div>
</body></html>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pages = {"blue.html": greet_page("#2060c0"), "orange.html": greet_page("#e07010")}
    with serve_pages(Path(tmp_path_factory.mktemp("site")), pages) as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[WebBrowser]:
    with WebBrowser() as shared:
        yield shared


def to_model(x: float, y: float) -> dict[str, float]:
    return {"x": x / CSS_SIZE[0] * 1000, "y": y / CSS_SIZE[1] * 1000}


def step(*actions: dict[str, Any]) -> str:
    return json.dumps({"note": "", "thought": "", "actions": list(actions)})


SCRIPT = [
    step(
        {"action": "write_element_abs", "content": "Zoë", **to_model(*NAME)},
        {"action": "wait", "seconds": 0.3},
    ),
    step(
        {"action": "click_element", "element": "Greet", **to_model(*GREET)},
        {"action": "wait", "seconds": 0.3},
    ),
    step({"action": "answer", "content": "greeted"}),
]


@pytest.fixture(scope="module")
def recording(browser: WebBrowser, site: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recordings")

    async def record() -> None:
        policy = ModelPolicy(get_dialect("holo"), ScriptedEngine(SCRIPT), name="scripted")
        backend = open_backend(
            "web", browser=browser, url=f"{site}/blue.html", width=CSS_SIZE[0], height=CSS_SIZE[1]
        )
        config = ServerConfig(listen="127.0.0.1:0", record=True, record_dir=str(root))
        try:
            async with serve(config, policies=[policy]) as running:
                outcome = await run_session(running.address, "greet Zoë", backend, SessionOptions())
        finally:
            backend.close()
        assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason

    asyncio.run(record())
    (found,) = find_recordings([root])
    return found


def test_replaying_on_the_same_page_matches(
    recording: Path, site: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["replay", str(recording), "--backend", "web", "--url", f"{site}/blue.html"])
    out = capsys.readouterr().out
    assert code == ExitCode.SUCCEEDED, out
    assert "all steps match" in out


def test_replaying_on_a_changed_page_mismatches_at_the_greeting(
    recording: Path, site: str, browser: WebBrowser
) -> None:
    backend = open_backend(
        "web", browser=browser, url=f"{site}/orange.html", width=CSS_SIZE[0], height=CSS_SIZE[1]
    )
    try:
        result = Replayer(
            LoadedRecording.load(recording), backend, ReplaySettings(settle_s=1.0)
        ).run()
    finally:
        backend.close()
    assert [(s.step, s.matched) for s in result.steps] == [
        (0, True),
        (1, True),
        (2, False),
        (3, True),
    ]
    diff = result.steps[2].diff
    assert diff is not None
    assert diff.bbox is not None
    assert all(abs(a - b) <= 3 for a, b in zip(diff.bbox, (20, 90, 540, 330), strict=True))


def test_url_is_only_for_the_web_backend(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["replay", str(recording), "--backend", "fake", "--url", "http://x"])
    assert code == ExitCode.USAGE
    assert "--url is for the web backend" in capsys.readouterr().err
