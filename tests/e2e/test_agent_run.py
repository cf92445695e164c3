"""One whole agent run: daemon + client + X11 backend + a real Tk app on Xvfb.

The policy is scripted, but its outputs are model text in a real dialect, so they
go through the daemon's parser and coordinate mapping and the client's frame ->
screen mapping exactly as a model's would. Every assertion reads what the probe
app actually received from the X server.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.events import Outcome
from holodesk.client.outcome import SessionOutcome
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.dialects.coords import smart_resize
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.geometry import Size
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.platform.select import open_backend
from tests.support.probe import BUTTON1_MASK, CONTROL_MASK, ProbeApp, wheel_notches

pytestmark = [pytest.mark.x11, pytest.mark.e2e]

SCREEN = (1280, 800)
UNICODE_TEXT = "héllo wörld ñ € 日本"

# Turns a screen pixel into the dialect's model coordinates.
ToModel = Callable[[float, float], list[float]]


def holo2_coordinates(x: float, y: float) -> list[float]:
    """Holo2: normalized 0-1000 of the image, whatever its size."""
    return [round(x / SCREEN[0] * 1000, 3), round(y / SCREEN[1] * 1000, 3)]


def holo15_coordinates(x: float, y: float) -> list[float]:
    """Holo1.5: pixels of the image after the processor's smart resize."""
    spec = get_dialect("holo1.5").spec.resize
    resized = smart_resize(Size(*SCREEN), spec.factor, spec.min_pixels, spec.max_pixels)
    return [round(x * resized.width / SCREEN[0], 3), round(y * resized.height / SCREEN[1], 3)]


@pytest.fixture
def probe(xvfb: str, tmp_path: Path) -> Iterator[ProbeApp]:
    app = ProbeApp.start(xvfb, tmp_path / "probe.jsonl")
    yield app
    app.stop()


def step(*actions: dict[str, Any], thought: str = "") -> str:
    return json.dumps({"note": "", "thought": thought, "actions": list(actions)})


def script_for(probe: ProbeApp, to_model: ToModel) -> list[str]:
    ok_x, ok_y = probe.widgets["ok"].center
    entry_x, entry_y = probe.widgets["entry"].center
    canvas = probe.widgets["canvas"]
    cx, cy = canvas.center
    drag_path = [
        to_model(canvas.x + 20, canvas.y + 20),
        to_model(cx, cy),
        to_model(canvas.x + canvas.width - 20, canvas.y + canvas.height - 20),
    ]

    def xy(x: float, y: float) -> dict[str, float]:
        mx, my = to_model(x, y)
        return {"x": mx, "y": my}

    return [
        step({"action": "click_element", "element": "OK", **xy(ok_x, ok_y)}, thought="press OK"),
        step(
            {"action": "write_element_abs", "content": UNICODE_TEXT, **xy(entry_x, entry_y)},
            thought="type into the entry",
        ),
        step({"action": "hotkey", "keys": ["ctrl", "a"]}, thought="select all"),
        step({"action": "drag", "path": drag_path}, thought="drag across the canvas"),
        step(
            *(
                {"action": "scroll", "direction": d, "amount": 2, **xy(cx, cy)}
                for d in ("down", "up", "left", "right")
            ),
            thought="scroll four ways",
        ),
        step({"action": "right_click", **xy(cx, cy)}, {"action": "double_click", **xy(cx, cy)}),
        step({"action": "answer", "content": "probe exercised"}),
    ]


async def run_scripted(
    display: str, dialect: str, outputs: list[str], task: str = "exercise the probe"
) -> SessionOutcome:
    policy = ModelPolicy(get_dialect(dialect), ScriptedEngine(outputs), name="scripted")
    backend = open_backend("x11", display=display)
    try:
        async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
            return await run_session(running.address, task, backend, SessionOptions())
    finally:
        backend.close()


@pytest.mark.parametrize(
    ("dialect", "to_model"),
    [("holo", holo2_coordinates), ("holo1.5", holo15_coordinates)],
    ids=["holo2-normalized", "holo1.5-resized-pixels"],
)
async def test_scripted_run_drives_the_real_app(
    xvfb: str, probe: ProbeApp, dialect: str, to_model: ToModel
) -> None:
    outcome = await run_scripted(xvfb, dialect, script_for(probe, to_model))

    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert outcome.answer == "probe exercised"
    assert outcome.steps == 7

    # The click landed on OK: Tk only runs the command for a press+release inside it.
    probe.wait_for_event("command", widget="ok")
    # Unicode text arrived intact, character for character.
    assert probe.wait_for_entry(UNICODE_TEXT) == UNICODE_TEXT
    # The chord: 'a' pressed while Control was held.
    chord = probe.wait_for_event("key", keysym="a")
    assert chord["state"] & CONTROL_MASK

    canvas = probe.widgets["canvas"]
    events = probe.wait_for(lambda evs: len(wheel_notches(evs)) >= 8)
    # The drag: pressed at the first point, moved with button 1 held, released at the last.
    presses = [e for e in events if e["type"] == "press" and e["widget"] == "canvas"]
    first_press = presses[0]
    assert (first_press["num"], first_press["x_root"], first_press["y_root"]) == (
        1,
        canvas.x + 20,
        canvas.y + 20,
    )
    dragged = [e for e in events if e["type"] == "motion" and e["state"] & BUTTON1_MASK]
    assert dragged, "no motion with button 1 held"
    release = next(e for e in events if e["type"] == "release" and e["widget"] == "canvas")
    assert (release["x_root"], release["y_root"]) == (
        canvas.x + canvas.width - 20,
        canvas.y + canvas.height - 20,
    )
    # Scrolls in all four directions, two notches each, in order.
    assert wheel_notches(events)[:8] == [(0, 1)] * 2 + [(0, -1)] * 2 + [(-1, 0)] * 2 + [(1, 0)] * 2
    # Right click then a double click at the canvas centre.
    tail = probe.wait_for(lambda evs: sum(e["type"] == "press" and e["num"] == 1 for e in evs) >= 4)
    clicks = [e for e in tail if e["type"] == "press" and e["num"] in (1, 3)][-3:]
    assert [c["num"] for c in clicks] == [3, 1, 1]
    assert {(c["x_root"], c["y_root"]) for c in clicks} == {canvas.center}


async def test_fail_action_ends_the_run_as_failed(xvfb: str, probe: ProbeApp) -> None:
    ok_x, ok_y = probe.widgets["ok"].center
    outputs = [
        step({"action": "click", "x": ok_x / SCREEN[0] * 1000, "y": ok_y / SCREEN[1] * 1000}),
        step({"action": "fail", "reason": "the dialog never appeared"}),
    ]
    outcome = await run_scripted(xvfb, "holo", outputs)
    assert outcome.outcome is Outcome.FAILED
    assert "the dialog never appeared" in outcome.reason
    probe.wait_for_event("command", widget="ok")


async def test_unparseable_model_output_fails_cleanly_and_touches_nothing(
    xvfb: str, probe: ProbeApp
) -> None:
    outputs = ["I think I should click somewhere nice", '{"action": {"action": "click"}}', "}{"]
    outcome = await run_scripted(xvfb, "holo", outputs * 3)
    assert outcome.outcome is Outcome.FAILED
    assert "parse" in outcome.reason.lower() or "action" in outcome.reason.lower()
    assert not probe.events("press"), "a parse failure must never reach the desktop"
