"""`holodesk mcp` over stdio, driven by the MCP SDK's own client, on a real Xvfb.

The server is a real subprocess; the desktop is the session's Xvfb with the Tk
probe app, which logs every event the X server delivers to it. Nothing is mocked:
a screenshot is checked pixel by pixel against the probe's colours, a click must
reach the probe's button, typed text must land in its entry, and a denied chord
must be refused by the same guard `holodesk run` uses and never reach the app.
"""

from __future__ import annotations

import asyncio
import html
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.daemon.policies.ocr.policy import OcrPolicy
from tests.daemon.support import running_daemon
from tests.support.probe import BUTTON1_MASK, CONTROL_MASK, ProbeApp, wheel_notches

from .mcp_support import geometry_of, image_of, stdio_session, structured, text_of

pytestmark = [pytest.mark.x11, pytest.mark.e2e]

TOOLS = {
    "screenshot",
    "list_displays",
    "click",
    "move",
    "type_text",
    "key",
    "scroll",
    "drag",
    "locate",
    "run_task",
}


@pytest.fixture
def probe(xvfb: str, tmp_path: Path) -> Iterator[ProbeApp]:
    app = ProbeApp.start(xvfb, tmp_path / "probe.jsonl")
    yield app
    app.stop()


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    value = hex_colour.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


async def test_tools_are_listed_and_a_screenshot_shows_the_real_screen(
    xvfb: str, probe: ProbeApp, tmp_path: Path
) -> None:
    async with stdio_session(xvfb, tmp_path / "mcp.err") as session:
        listed = await session.list_tools()
        assert {tool.name for tool in listed.tools} >= TOOLS
        click = next(tool for tool in listed.tools if tool.name == "click")
        assert {"x", "y", "button", "count", "modifiers"} <= set(click.input_schema["properties"])

        shot = await session.call_tool("screenshot", {})
        assert not shot.is_error, text_of(shot)
        image = image_of(shot).convert("RGB")
        assert image.size == (1280, 800)
        assert geometry_of(shot) == {
            "display": "all",
            "origin_x": 0,
            "origin_y": 0,
            "width": 1280,
            "height": 800,
            "image_width": 1280,
            "image_height": 800,
            "scale": 1.0,
        }
        # Image pixels are screen pixels: the probe's swatch and canvas are where
        # the probe says it put them, in their colours.
        for widget, colour in (("swatch", "swatch"), ("canvas", "canvas")):
            x, y = probe.widgets[widget].center
            assert image.getpixel((x, y)) == _rgb(probe.colors[colour]), widget

        displays = structured(await session.call_tool("list_displays", {}))["displays"]
        assert [(d["width"], d["height"], d["primary"]) for d in displays] == [(1280, 800, True)]
        one = await session.call_tool("screenshot", {"display": displays[0]["id"]})
        assert image_of(one).size == (1280, 800)
        # Shrunk to what a host's model sees, with the scale back to screen pixels.
        small = await session.call_tool("screenshot", {"max_width": 640})
        shrunk = image_of(small).convert("RGB")
        assert shrunk.size == (640, 400)
        assert geometry_of(small)["scale"] == 2.0
        sx, sy = probe.widgets["swatch"].center
        assert shrunk.getpixel((sx // 2, sy // 2)) == _rgb(probe.colors["swatch"])
        missing = await session.call_tool("screenshot", {"display": "no-such-display"})
        assert missing.is_error
        assert "no display 'no-such-display'" in text_of(missing)


async def test_click_type_and_keys_reach_the_app_through_the_guard(
    xvfb: str, probe: ProbeApp, tmp_path: Path
) -> None:
    async with stdio_session(xvfb, tmp_path / "mcp.err") as session:
        ok_x, ok_y = probe.widgets["ok"].center
        clicked = structured(await session.call_tool("click", {"x": ok_x, "y": ok_y}))
        assert clicked["status"] == "ok"
        probe.wait_for_event("command")
        press = probe.wait_for_event("press", num=1, widget="ok")
        assert (press["x_root"], press["y_root"]) == (ok_x, ok_y)

        entry_x, entry_y = probe.widgets["entry"].center
        structured(await session.call_tool("click", {"x": entry_x, "y": entry_y}))
        probe.wait_for_event("focus", widget="entry")
        structured(await session.call_tool("type_text", {"text": "héllo wörld"}))
        probe.wait_for_entry("héllo wörld")
        structured(await session.call_tool("key", {"keys": "backspace"}))
        probe.wait_for_entry("héllo wörl")
        structured(await session.call_tool("key", {"keys": "ctrl+a"}))
        chord = probe.wait_for_event("key", keysym="a", widget="entry")
        assert chord["state"] & CONTROL_MASK

        # A right double-click with shift held, in screen pixels.
        cx, cy = probe.widgets["canvas"].center
        args = {"x": cx, "y": cy, "button": "right", "count": 2, "modifiers": ["shift"]}
        structured(await session.call_tool("click", args))
        double = probe.wait_for_event("multi", count=2, num=3, widget="canvas")
        assert double["widget"] == "canvas"

        # A point on no display is refused by the executor's mapping, not clamped.
        off = await session.call_tool("click", {"x": 5000, "y": 10})
        assert off.is_error
        assert "outside the frame" in text_of(off)


async def test_a_denied_chord_is_refused_by_the_guard_and_never_sent(
    xvfb: str, probe: ProbeApp, tmp_path: Path
) -> None:
    async with stdio_session(xvfb, tmp_path / "mcp.err", "--deny-chord", "ctrl+shift+k") as session:
        entry_x, entry_y = probe.widgets["entry"].center
        structured(await session.call_tool("click", {"x": entry_x, "y": entry_y}))
        probe.wait_for_event("focus", widget="entry")

        # The built-in denylist, and one added with --deny-chord (named in any order).
        for chord, named in (
            ("ctrl+alt+delete", "ctrl+alt+delete"),
            ("shift+ctrl+k", "ctrl+shift+k"),
        ):
            refused = await session.call_tool("key", {"keys": chord})
            assert refused.is_error, chord
            message = text_of(refused)
            assert f"rejected: key {chord}: the key chord {named} is denied" in message

        # The X server delivers in order: once the marker arrives, anything the
        # refused chords had sent would have arrived before it.
        structured(await session.call_tool("type_text", {"text": "m"}))
        probe.wait_for_entry("m")
        pressed = {event["keysym"] for event in probe.events("key")}
        assert pressed == {"m"}, pressed


async def test_run_task_and_locate_go_through_a_real_daemon_with_the_ocr_policy(
    xvfb: str, probe: ProbeApp, tmp_path: Path
) -> None:
    recordings = tmp_path / "recordings"
    async with running_daemon([OcrPolicy()]) as daemon:
        flags = ("--server", daemon.running.address, "--record", str(recordings))
        async with stdio_session(xvfb, tmp_path / "mcp.err", *flags) as session:
            found = structured(await session.call_tool("locate", {"description": "OK"}))
            assert found["found"] is True, found
            ok = probe.widgets["ok"]
            assert ok.contains(found["x"], found["y"]), (found, ok)
            box = found["box"]
            assert ok.contains(box["x"], box["y"])
            absent = structured(
                await session.call_tool("locate", {"description": "Definitely Not Here"})
            )
            assert absent["found"] is False

            told: list[tuple[float, str | None]] = []

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                told.append((progress, message))

            result = await session.call_tool(
                "run_task", {"task": 'click "OK"'}, progress_callback=on_progress
            )
            ran = structured(result)
    assert ran["outcome"] == "succeeded", ran
    probe.wait_for_event("command")
    check_run(ran, recordings)
    # Every step was told as it ended, in order (MCP progress notifications).
    assert [step for step, _ in told] == [float(s["step"]) for s in ran["history"]]
    assert all(message and message.startswith(f"step {int(step)}: ") for step, message in told)


def check_run(ran: dict[str, Any], recordings: Path) -> None:
    """run_task's summary names its steps, its recording and `holodesk report`'s page."""
    assert ran["steps"] >= 1
    actions = [a for step in ran["history"] for a in step["actions"]]
    assert any(a["action"].startswith("click") and a["result"].startswith("ok") for a in actions)
    recording = Path(ran["recording"])
    assert recording.parent == recordings
    assert recording.is_dir()
    report = Path(ran["report"])
    assert report.parent == recordings
    assert report.suffix == ".html"
    # `holodesk report`'s page: the task as its title, and the step's frame inline.
    page = report.read_text(encoding="utf-8")
    task = html.escape('click "OK"')
    assert f'<h1 class="task">{task}</h1>' in page
    assert "data:image/" in page


needs_xdotool = pytest.mark.skipif(
    shutil.which("xdotool") is None, reason="needs xdotool to act as the person at the desk"
)


def _xdotool(display: str, *args: str) -> None:
    """What a person does at the desk, through the X server (XTEST), not through MCP."""
    subprocess.run(["xdotool", *args], env={**os.environ, "DISPLAY": display}, check=True)


@needs_xdotool
async def test_the_fail_safe_corner_refuses_actions_while_the_pointer_is_in_it(
    xvfb: str, probe: ProbeApp, tmp_path: Path
) -> None:
    ok_x, ok_y = probe.widgets["ok"].center
    async with stdio_session(xvfb, tmp_path / "mcp.err") as session:
        await asyncio.to_thread(_xdotool, xvfb, "mousemove", "0", "0")
        refused = await session.call_tool("click", {"x": ok_x, "y": ok_y})
        assert refused.is_error
        assert "fail-safe: the pointer is in the top-left corner" in text_of(refused)
        # Out of the corner again: the next action runs (the stop was that action's).
        await asyncio.to_thread(_xdotool, xvfb, "mousemove", "700", "600")
        structured(await session.call_tool("click", {"x": ok_x, "y": ok_y}))
        probe.wait_for_event("command")
    assert len(probe.events("command")) == 1


@needs_xdotool
async def test_the_emergency_stop_hotkey_refuses_every_later_action(
    xvfb: str, probe: ProbeApp, tmp_path: Path
) -> None:
    async with stdio_session(xvfb, tmp_path / "mcp.err") as session:
        x, y = probe.widgets["canvas"].center
        structured(await session.call_tool("move", {"x": x, "y": y}))
        # A person presses holodesk run's emergency stop (the server listens for it
        # before it answers anything).
        await asyncio.to_thread(_xdotool, xvfb, "key", "ctrl+alt+shift+Escape")
        while not (moved := await session.call_tool("move", {"x": x, "y": y})).is_error:
            pass  # until the listener's thread has seen it (moves here are harmless)
        assert "emergency stop (ctrl+alt+shift+escape) pressed" in text_of(moved)
        ok_x, ok_y = probe.widgets["ok"].center
        clicked = await session.call_tool("click", {"x": ok_x, "y": ok_y})
        assert clicked.is_error
        assert "acts no more until it is restarted" in text_of(clicked)
        ran = await session.call_tool("run_task", {"task": 'click "OK"'})
        assert ran.is_error
        assert "emergency stop" in text_of(ran)
        # Still one more look at the screen: stopping the agent is not blinding it.
        assert not (await session.call_tool("screenshot", {})).is_error
    assert probe.events("command") == []


async def test_move_drag_and_scroll_land_on_the_screen_pixels_given(
    xvfb: str, probe: ProbeApp, tmp_path: Path
) -> None:
    canvas = probe.widgets["canvas"]
    cx, cy = canvas.center
    start = (canvas.x + 20, canvas.y + 20)
    end = (canvas.x + canvas.width - 20, canvas.y + canvas.height - 20)
    async with stdio_session(xvfb, tmp_path / "mcp.err") as session:
        structured(await session.call_tool("move", {"x": cx, "y": cy}))
        probe.wait_for_event("motion", x_root=cx, y_root=cy)

        dragged = {"path": [list(start), [cx, cy], list(end)], "duration_ms": 100}
        structured(await session.call_tool("drag", dragged))
        pressed = probe.wait_for_event("press", num=1, widget="canvas")
        released = probe.wait_for_event("release", num=1, widget="canvas")
        assert (pressed["x_root"], pressed["y_root"]) == start
        assert (released["x_root"], released["y_root"]) == end
        held = [e for e in probe.events("motion") if e["state"] & BUTTON1_MASK]
        assert (held[-1]["x_root"], held[-1]["y_root"]) == end

        structured(await session.call_tool("scroll", {"x": cx, "y": cy, "dy": 2}))
        structured(await session.call_tool("scroll", {"x": cx, "y": cy, "dx": -1}))
        probe.wait_for(lambda events: len(wheel_notches(events)) == 3)
        assert wheel_notches(probe.events()) == [(0, 1), (0, 1), (-1, 0)]

        short = await session.call_tool("drag", {"path": [list(start)]})
        assert short.is_error
