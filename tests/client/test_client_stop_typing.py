"""Every way of stopping a session cuts a running type action off (issue 15 item 1).

A real session: the scripted daemon sends a long type action, the client types it
into the probe app on Xvfb through the X11 backend, and the session is stopped
once the first keys have arrived: by the emergency-stop hotkey (pressed with
xdotool), by cancelling the session's task (what Ctrl-C and the tray do), or by
the daemon ending the session (an operator's cancel). The probe app stamps each
key with the X server's clock, so "nothing reaches the desktop more than 100 ms
after the stop" is counted, not timed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest

from holodesk.client import actions as a
from holodesk.client.events import Outcome
from holodesk.client.outcome import SessionOutcome
from holodesk.client.session import SessionOptions, run_session
from holodesk.platform.base import Backend
from holodesk.proto.v1 import agent_pb2
from tests.platform.stopping import GRACE_MS, drain, ms_after, over_canvas, x_time_ms
from tests.support.probe import ProbeApp

from .scripted import Conversation, Script, ScriptedDaemon, key_down, type_text

pytestmark = [
    pytest.mark.abuse,
    pytest.mark.x11,
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or not shutil.which("xdotool"),
        reason="needs Linux with Xvfb and xdotool",
    ),
]

Daemon = Callable[[Script], ScriptedDaemon]
TEXT = "stop me now " * 800  # 9,600 characters: within one type action's default limit
# The emergency-stop chord's own keys reach the probe too (it is the focused app).
_HOTKEY_KEYSYMS = {"Control_L", "Alt_L", "Shift_L", "Escape"}


def _typed_keys(probe: ProbeApp) -> list[dict[str, object]]:
    return [
        e
        for e in probe.events()
        if e["type"] in ("key", "keyup") and e["keysym"] not in _HOTKEY_KEYSYMS
    ]


async def _first_key(probe: ProbeApp) -> None:
    while not _typed_keys(probe):  # noqa: ASYNC110 - the probe is another process
        await asyncio.sleep(0.005)


def _late(probe: ProbeApp, x11: Backend, stop_ms: int) -> tuple[int, int]:
    """(keys typed, keys stamped more than GRACE_MS after `stop_ms`), once all arrived."""
    drain(probe, x11.input)
    typed = _typed_keys(probe)
    late = [e for e in typed if ms_after(int(str(e["time"])), stop_ms) > GRACE_MS]
    return len(typed), len(late)


def _typing_script(
    ended: list[str], until: threading.Event | None = None, hold_shift: bool = False
) -> Script:
    """Send one long type action (after holding Shift down, if asked); then end the
    session when `until` is set (the daemon's own cancel), or answer the client's cancel."""

    async def script(conv: Conversation) -> None:
        await conv.open()
        held = [key_down("k", "shift")] if hold_shift else []
        await conv.send_actions(1, *held, type_text("t", TEXT), type_text("t2", "never"))
        if until is not None:
            await asyncio.to_thread(until.wait, 30)
            await conv.end(agent_pb2.SESSION_OUTCOME_CANCELLED, reason="cancelled by an operator")
            ended.append("daemon")
            return
        message = await conv.recv()
        ended.append(message.cancel.reason)
        await conv.end(agent_pb2.SESSION_OUTCOME_CANCELLED, reason=message.cancel.reason)

    return script


def _assert_cut_off(outcome: SessionOutcome, typed: int, late: int) -> None:
    assert outcome.outcome is Outcome.CANCELLED
    assert late == 0, f"{late} of {typed} key events reached the app after the stop"
    assert 0 < typed < 2 * len(TEXT)  # it had started, and did not finish
    (step,) = outcome.history
    assert [r.status for r in step.results] == [a.ActionStatus.FAILED, a.ActionStatus.SKIPPED]


async def test_the_emergency_stop_cuts_typing_off(
    xvfb: str, x11: Backend, probe: ProbeApp, daemon: Daemon
) -> None:
    """Proves: the hotkey pressed while 9,600 characters are being typed stops the
    keystrokes at once (they all used to arrive, seconds after the stop)."""
    ended: list[str] = []
    over_canvas(probe, x11.input)
    server = daemon(_typing_script(ended))
    run = asyncio.create_task(run_session(server.target, "t", x11, SessionOptions()))
    await asyncio.wait_for(_first_key(probe), 30)
    env = {**os.environ, "DISPLAY": xvfb}
    await asyncio.to_thread(
        subprocess.run, ["xdotool", "key", "ctrl+alt+shift+Escape"], env=env, check=True
    )
    outcome = await asyncio.wait_for(run, 30)
    # The chord completes when its last key goes down: no sooner than the last of its
    # presses the app logged (typing between them can change what it logs for one).
    drain(probe, x11.input)
    pressed = [int(e["time"]) for e in probe.events("key") if e["keysym"] in _HOTKEY_KEYSYMS]
    typed, late = _late(probe, x11, max(pressed))
    _assert_cut_off(outcome, typed, late)
    assert outcome.reason == "emergency stop (ctrl+alt+shift+escape pressed)"
    assert outcome.history[0].results[0].error == f"stopped: {outcome.reason}"


async def test_cancelling_the_session_cuts_typing_off(
    x11: Backend, probe: ProbeApp, daemon: Daemon
) -> None:
    """Proves: cancelling run_session's task (Ctrl-C under asyncio.run, the tray's
    Stop) mid-type stops the keystrokes at once, and the daemon is told."""
    ended: list[str] = []
    over_canvas(probe, x11.input)
    server = daemon(_typing_script(ended))
    run = asyncio.create_task(run_session(server.target, "t", x11, SessionOptions()))
    await asyncio.wait_for(_first_key(probe), 30)
    stopped = time.monotonic()
    run.cancel()
    outcome = await asyncio.wait_for(run, 30)
    typed, late = _late(probe, x11, x_time_ms(stopped))
    _assert_cut_off(outcome, typed, late)
    assert ended == ["cancelled by the user"]


async def test_the_daemon_ending_the_session_cuts_typing_off(
    x11: Backend, probe: ProbeApp, daemon: Daemon
) -> None:
    """Proves: when the daemon ends the session mid-type (an operator's cancel from
    the tray or ControlService), the keystrokes stop at once and the outcome is the
    daemon's."""
    ended: list[str] = []
    first_key = threading.Event()
    over_canvas(probe, x11.input)
    server = daemon(_typing_script(ended, until=first_key))
    run = asyncio.create_task(run_session(server.target, "t", x11, SessionOptions()))
    await asyncio.wait_for(_first_key(probe), 30)
    stopped = time.monotonic()
    first_key.set()
    outcome = await asyncio.wait_for(run, 30)
    typed, late = _late(probe, x11, x_time_ms(stopped))
    _assert_cut_off(outcome, typed, late)
    assert outcome.reason == "cancelled by an operator"
    assert ended == ["daemon"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_holodesk_run(
    xvfb: str, x11: Backend, probe: ProbeApp, daemon: Daemon, signum: signal.Signals
) -> None:
    """Proves: SIGTERM (as Ctrl-C's SIGINT) to a real `holodesk run` mid-type stops the
    keystrokes at once, releases the Shift it held, tells the daemon, and exits 3
    (cancelled), not 143."""
    ended: list[str] = []
    over_canvas(probe, x11.input)
    server = daemon(_typing_script(ended, hold_shift=True))
    command = [sys.executable, "-m", "holodesk.client", "run", "--server", server.target]
    command += ["--backend", "x11", "--no-estop", "--no-fail-safe", "type it all"]
    env = {**os.environ, "DISPLAY": xvfb}
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while not _typed_keys(probe) and time.monotonic() < deadline:
            time.sleep(0.005)
        stopped = time.monotonic()
        process.send_signal(signum)
        output, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    typed, late = _late(probe, x11, x_time_ms(stopped))
    assert process.returncode == 3, output
    assert late == 0, f"{late} of {typed} key events reached the app after {signum.name}"
    assert 0 < typed < 2 * len(TEXT)
    assert ended == ["cancelled by the user"]
    shift = [e["type"] for e in probe.events() if e.get("keysym") == "Shift_L"]
    assert shift[0] == "key"
    assert shift[-1] == "keyup"
