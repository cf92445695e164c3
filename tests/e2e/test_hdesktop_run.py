"""H Company's desktop format end to end: daemon (hdesktop dialect, a scripted engine
answering in the format) + client + X11 backend + the Tk probe app on Xvfb.

The model's tool calls go through the daemon's parser and 0-1000 mapping and the
client's frame -> screen mapping as a real model's would; every assertion reads what
the probe app received from the X server. The drag is the format's own: the pointer
is put in place by move_to_desktop, and drag_to_desktop presses where it is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.events import Outcome
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.platform.select import open_backend
from tests.support.probe import BUTTON1_MASK, SHIFT_MASK, ProbeApp, wheel_notches

pytestmark = [pytest.mark.x11, pytest.mark.e2e]

SCREEN = (1280, 800)
TEXT = "héllo wörld ñ € 日本"


@pytest.fixture
def probe(xvfb: str, tmp_path: Path) -> Iterator[ProbeApp]:
    app = ProbeApp.start(xvfb, tmp_path / "probe.jsonl")
    yield app
    app.stop()


def step(call: dict[str, Any], note: str | None = None) -> str:
    return json.dumps({"note": note, "thought": call["tool_name"], "tool_call": call})


def model(x: float, y: float) -> dict[str, int]:
    """A screen pixel as the format's integers in [0, 1000]."""
    return {"x": round(x / SCREEN[0] * 1000), "y": round(y / SCREEN[1] * 1000)}


def script(probe: ProbeApp) -> list[str]:
    ok, entry, canvas = probe.widgets["ok"], probe.widgets["entry"], probe.widgets["canvas"]
    start = model(canvas.x + 30, canvas.y + 30)
    end = model(canvas.x + canvas.width - 30, canvas.y + canvas.height - 30)
    centre = model(*canvas.center)
    plan = [{"title": "Press OK", "status": "running"}, {"title": "Type", "status": "todo"}]
    return [
        step({"tool_name": "update_plan", "goals": plan}, note="a probe window is open"),
        step({"tool_name": "click_desktop", "element": "OK button", **model(*ok.center)}),
        step({"tool_name": "click_desktop", "element": "the entry", **model(*entry.center)}),
        step({"tool_name": "write_desktop", "content": TEXT}),
        step({"tool_name": "hold_and_tap_key_desktop", "hold_keys": ["shift"],
              "tap_keys": ["left"]}),
        step({"tool_name": "move_to_desktop", "element": "canvas corner", **start}),
        step({"tool_name": "drag_to_desktop", "element": "far corner", **end}),
        step({"tool_name": "scroll_desktop", "element": "canvas", **centre, "direction": "down",
              "scroll_size": 2}),
        step({"tool_name": "click_desktop", "element": "canvas", **centre, "button": "right"}),
        step({"tool_name": "double_click_desktop", "element": "canvas", **centre}),
        step({"tool_name": "answer", "content": "probe exercised"}),
    ]  # fmt: skip


async def test_the_hdesktop_format_drives_the_real_app(xvfb: str, probe: ProbeApp) -> None:
    outputs = script(probe)
    policy = ModelPolicy(get_dialect("hdesktop"), ScriptedEngine(outputs), name="scripted")
    backend = open_backend("x11", display=xvfb)
    try:
        async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
            outcome = await run_session(
                running.address, "exercise the probe", backend, SessionOptions()
            )
    finally:
        backend.close()

    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert outcome.answer == "probe exercised"
    assert outcome.steps == len(outputs)

    probe.wait_for_event("command", widget="ok")
    # write_desktop types where the focus is (the click before it put it there).
    assert probe.wait_for_entry(TEXT) == TEXT
    left = probe.wait_for_event("key", keysym="Left")
    assert left["state"] & SHIFT_MASK

    canvas = probe.widgets["canvas"]
    events = probe.wait_for(lambda evs: len(wheel_notches(evs)) >= 2)
    moves = [e for e in events if e["type"] == "motion" and e["widget"] == "canvas"]
    presses = [e for e in events if e["type"] == "press" and e["widget"] == "canvas"]
    # The drag pressed button 1 exactly where move_to_desktop left the pointer...
    first = presses[0]
    assert first["num"] == 1
    before = [m for m in moves if m["time"] <= first["time"] and not m["state"] & BUTTON1_MASK]
    assert (first["x_root"], first["y_root"]) == (before[-1]["x_root"], before[-1]["y_root"])
    assert abs(first["x_root"] - (canvas.x + 30)) <= 1
    assert abs(first["y_root"] - (canvas.y + 30)) <= 1
    # ...moved with it held, and released at the far corner.
    assert any(m["state"] & BUTTON1_MASK for m in moves)
    release = next(e for e in events if e["type"] == "release" and e["widget"] == "canvas")
    assert abs(release["x_root"] - (canvas.x + canvas.width - 30)) <= 1
    assert abs(release["y_root"] - (canvas.y + canvas.height - 30)) <= 1
    assert wheel_notches(events)[:2] == [(0, 1), (0, 1)]
    tail = probe.wait_for(lambda evs: any(e["type"] == "multi" and e["count"] == 2 for e in evs))
    clicks = [e for e in tail if e["type"] == "press" and e["widget"] == "canvas"][-3:]
    assert [c["num"] for c in clicks] == [3, 1, 1]
    assert all(canvas.contains(c["x_root"], c["y_root"]) for c in clicks)
