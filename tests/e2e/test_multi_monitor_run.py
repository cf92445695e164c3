"""A run on a two-monitor X desktop: actions land on the display the frame came from.

The Xvfb screen is split into two RandR monitors, the probe app sits on the right
one, and the model's coordinates are relative to the frame it saw: either that
monitor alone (its origin is 1280 px right of the desktop's) or the whole desktop.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.client.events import Outcome
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.platform.select import open_backend
from tests.support.probe import ProbeApp
from tests.support.randr import Monitor, set_monitors
from tests.support.xvfb import xvfb as start_xvfb

pytestmark = [pytest.mark.x11, pytest.mark.e2e]

LEFT = Monitor("LEFT-1", 0, 0, 1280, 800, primary=True)
RIGHT = Monitor("RIGHT-1", 1280, 0, 640, 480)


@pytest.fixture(scope="module")
def two_monitors() -> Iterator[str]:
    with start_xvfb(LEFT.width + RIGHT.width, LEFT.height) as display:
        set_monitors(display, [LEFT, RIGHT])
        yield display


@pytest.fixture
def probe_on_the_right(two_monitors: str, tmp_path: Path) -> Iterator[ProbeApp]:
    app = ProbeApp.start(two_monitors, tmp_path / "probe.jsonl", x=RIGHT.x + 30, y=40)
    yield app
    app.stop()


@pytest.mark.parametrize(
    ("display", "frame_origin", "frame_size"),
    [
        ("RIGHT-1", (RIGHT.x, RIGHT.y), (RIGHT.width, RIGHT.height)),
        ("all", (0, 0), (LEFT.width + RIGHT.width, LEFT.height)),
    ],
    ids=["right-monitor-frame", "whole-desktop-frame"],
)
async def test_click_lands_on_the_monitor_the_frame_shows(
    two_monitors: str,
    probe_on_the_right: ProbeApp,
    display: str,
    frame_origin: tuple[int, int],
    frame_size: tuple[int, int],
) -> None:
    ok_x, ok_y = probe_on_the_right.widgets["ok"].center
    assert ok_x > RIGHT.x, "the probe must sit on the right monitor"
    # Holo2 coordinates: 0-1000 over the frame the model saw.
    x = (ok_x - frame_origin[0]) / frame_size[0] * 1000
    y = (ok_y - frame_origin[1]) / frame_size[1] * 1000
    outputs = [
        json.dumps({"note": "", "thought": "", "action": {"action": "click", "x": x, "y": y}}),
        json.dumps({"note": "", "thought": "", "action": {"action": "answer", "content": "ok"}}),
    ]
    policy = ModelPolicy(get_dialect("holo"), ScriptedEngine(outputs), name="scripted")
    backend = open_backend("x11", display=two_monitors)
    try:
        async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
            outcome = await run_session(
                running.address, "press OK", backend, SessionOptions(display=display)
            )
    finally:
        backend.close()

    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    press = probe_on_the_right.wait_for_event("press", widget="ok")
    assert (press["x_root"], press["y_root"]) == (ok_x, ok_y)
    probe_on_the_right.wait_for_event("command", widget="ok")
