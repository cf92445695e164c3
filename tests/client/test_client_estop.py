"""The emergency-stop hotkey, for real: a global X11 hotkey on Xvfb, pressed with
xdotool (XTEST), heard through a passive key grab, stops a running session."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable

import pytest
from Xlib import XK, X
from Xlib.display import Display

from holodesk.client import actions as a
from holodesk.client.events import Notice, Outcome, SafetyNotice
from holodesk.client.session import SessionOptions, run_session
from holodesk.platform.backends import fake
from holodesk.platform.base import Backend
from holodesk.platform.safety.hotkeys import (
    DEFAULT_EMERGENCY_STOP,
    HotkeyError,
    HotkeyListener,
    _PynputHotkey,
    parse_chord,
    to_pynput,
)
from holodesk.proto.v1 import agent_pb2
from tests.platform.stopping import over_canvas
from tests.support.probe import ProbeApp

from .scripted import Conversation, Script, ScriptedDaemon, done, key_down, type_text, wait

Daemon = Callable[[Script], ScriptedDaemon]
needs_x = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not (shutil.which("Xvfb") and shutil.which("xdotool")),
    reason="needs Linux with Xvfb and xdotool",
)


def _press(display: str, *chords: str) -> None:
    """Press key chords on the X server, as a person would (xdotool sends XTEST input)."""
    for chord in chords:
        subprocess.run(
            ["xdotool", "key", chord], env={**os.environ, "DISPLAY": display}, check=True
        )


@pytest.mark.parametrize(
    ("text", "keys", "spelled"),
    [
        ("ctrl+alt+shift+escape", ("ctrl", "alt", "shift", "escape"), "<ctrl>+<alt>+<shift>+<esc>"),
        ("Control+Esc", ("ctrl", "escape"), "<ctrl>+<esc>"),
        ("cmd+shift+F12", ("meta", "shift", "f12"), "<cmd>+<shift>+<f12>"),
        ("ctrl+alt+Q", ("ctrl", "alt", "Q"), "<ctrl>+<alt>+q"),
        ("alt+pgup", ("alt", "pageup"), "<alt>+<page_up>"),
    ],
)
def test_chords_parse_to_pynput(text: str, keys: tuple[str, ...], spelled: str) -> None:
    assert parse_chord(text) == keys
    assert to_pynput(keys) == spelled


@pytest.mark.parametrize("text", ["escape", "ctrl+alt", "ctrl+a+b", "ctrl++", "ctrl+ctrl+x", ""])
def test_hotkeys_that_typing_could_set_off_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="hotkey"):
        parse_chord(text)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 only")
def test_no_display_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(HotkeyError, match="DISPLAY is not set"):
        HotkeyListener(DEFAULT_EMERGENCY_STOP, lambda: None).start()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 only")
async def test_a_session_without_a_hotkey_says_so_and_runs(
    daemon: Daemon, backend: fake.FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)

    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(1, done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")

    notices: list[Notice] = []
    outcome = await run_session(
        daemon(script).target, "t", backend, SessionOptions(on_notice=notices.append)
    )
    assert outcome.outcome is Outcome.SUCCEEDED
    (notice,) = notices
    assert isinstance(notice, SafetyNotice)
    assert notice.message.startswith("no emergency-stop hotkey: no X display")
    assert notice.message.endswith("stop with Ctrl-C")


@needs_x
def test_the_hotkey_fires_on_its_chord_only(xvfb: str) -> None:
    """Proves: partial chords and typing before it do not fire; the full chord does,
    once; and stopping ends the listener's thread (pynput alone would wait for the
    next key event)."""
    hits: list[int] = []
    fired = threading.Event()

    def on_press() -> None:
        hits.append(1)
        fired.set()

    listener = HotkeyListener(DEFAULT_EMERGENCY_STOP, on_press)
    listener.start()
    try:
        # X delivers events in order: once the full chord fires, the ones before were seen.
        _press(xvfb, "ctrl+Escape", "alt+shift+Escape", "Escape", "h", "i")
        _press(xvfb, "ctrl+alt+shift+Escape")
        assert fired.wait(30), "the hotkey never fired"
    finally:
        assert listener.stop(), "the listener's thread did not end"
    assert hits == [1]
    assert not listener.running


@needs_x
def test_a_chord_pressed_as_start_returns_is_heard(xvfb: str) -> None:
    """Proves: start() returns once the X server holds the grab, so a chord pressed at
    once is heard, every time (pynput's listener marked itself ready before the
    server recorded keys: 2 chords in 100 went unheard on a busy machine)."""
    for _ in range(10):
        fired = threading.Event()
        listener = HotkeyListener(DEFAULT_EMERGENCY_STOP, fired.set)
        listener.start()
        try:
            _press(xvfb, "ctrl+alt+shift+Escape")
            assert fired.wait(10), "the chord pressed as start() returned went unheard"
        finally:
            assert listener.stop(), "the listener's thread did not end"


@needs_x
@pytest.mark.parametrize(
    ("on", "off"),
    [
        (["key", "Num_Lock"], ["key", "Num_Lock"]),
        (["key", "Caps_Lock"], ["key", "Caps_Lock"]),
        (["keydown", "Super_L"], ["keyup", "Super_L"]),
    ],
    ids=["num-lock-on", "caps-lock-on", "another-modifier-held"],
)
def test_the_chord_fires_whatever_other_modifiers_are_down(
    xvfb: str, on: list[str], off: list[str]
) -> None:
    """Proves: Num Lock or Caps Lock on, or a modifier outside the chord held (the
    typist's Shift for a capital), does not hide the chord: every combination of the
    other modifiers is grabbed too."""
    fired = threading.Event()
    env = {**os.environ, "DISPLAY": xvfb}
    with HotkeyListener("ctrl+alt+escape", fired.set):
        subprocess.run(["xdotool", *on], env=env, check=True)
        try:
            _press(xvfb, "ctrl+alt+Escape")
            assert fired.wait(10), f"the chord went unheard with {on[1]} down"
        finally:
            subprocess.run(["xdotool", *off], env=env, check=True)


@needs_x
def test_a_chord_another_program_holds_is_refused_by_name(xvfb: str) -> None:
    other = Display(xvfb)
    try:
        escape = other.keysym_to_keycode(XK.string_to_keysym("Escape"))
        mask = X.ControlMask | X.Mod1Mask | X.ShiftMask
        other.screen().root.grab_key(escape, mask, False, X.GrabModeAsync, X.GrabModeAsync)
        other.sync()
        listener = HotkeyListener(DEFAULT_EMERGENCY_STOP, lambda: None)
        with pytest.raises(HotkeyError, match=r"already holds ctrl\+alt\+shift\+escape"):
            listener.start()
        assert not listener.running
    finally:
        other.close()


@needs_x
def test_the_chords_own_key_does_not_reach_the_app(
    xvfb: str, probe: ProbeApp, x11: Backend
) -> None:
    """Proves: the grab takes the chord's key (a stop is not input to the focused
    app); its modifiers still reach the app, as any held modifier would."""
    over_canvas(probe, x11.input)
    fired = threading.Event()
    with HotkeyListener(DEFAULT_EMERGENCY_STOP, fired.set):
        _press(xvfb, "ctrl+alt+shift+Escape", "x")
        assert fired.wait(10)
    probe.wait_for_event("key", keysym="x")
    keysyms = [e["keysym"] for e in probe.events("key")]
    assert "Escape" not in keysyms
    assert "Control_L" in keysyms


@needs_x
def test_the_pynput_listener_of_macos_and_windows_hears_the_chord(xvfb: str) -> None:
    """Proves: the pynput route (macOS and Windows) hears its chord and stops; tested
    through pynput's X11 backend, the only one here. Its ready mark comes before it
    listens (why X11 grabs instead), so the chord is pressed until heard."""
    fired = threading.Event()
    listener = _PynputHotkey.start(parse_chord(DEFAULT_EMERGENCY_STOP), fired.set, 5.0)
    try:
        for _ in range(20):
            _press(xvfb, "ctrl+alt+shift+Escape")
            if fired.wait(0.5):
                break
        assert fired.is_set(), "pynput never heard the chord"
    finally:
        # pynput's X11 thread ends at the next key event (its macOS and Windows
        # ones at once): one comes while stop() waits.
        threading.Timer(0.3, _press, (xvfb, "shift")).start()
        assert listener.stop(5.0), "pynput's thread did not end"


@needs_x
async def test_the_hotkey_stops_a_running_session(
    xvfb: str, daemon: Daemon, backend: fake.FakeBackend
) -> None:
    """Proves: the default emergency stop, pressed mid-batch, ends the session at once
    as cancelled: the running wait is cut short, the rest of the batch never runs,
    held keys are released, and the daemon is told why."""
    cancels: list[str] = []

    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(
            1, key_down("k", "shift"), wait("w", 60_000), type_text("t", "never")
        )
        message = await conv.recv()
        cancels.append(message.cancel.reason)
        await conv.end(agent_pb2.SESSION_OUTCOME_CANCELLED, reason=message.cancel.reason)

    server = daemon(script)
    run = asyncio.create_task(run_session(server.target, "t", backend, SessionOptions()))
    while "shift" not in backend.input.held()[0]:  # noqa: ASYNC110 - set on the backend thread
        await asyncio.sleep(0.01)
    await asyncio.to_thread(_press, xvfb, "ctrl+alt+shift+Escape")
    outcome = await run

    assert outcome.outcome is Outcome.CANCELLED
    assert outcome.reason == "emergency stop (ctrl+alt+shift+escape pressed)"
    assert cancels == [outcome.reason]
    assert backend.input.held() == ((), ())
    assert backend.input.events == [fake.Key("shift", True), fake.Key("shift", False)]
    (step,) = outcome.history
    assert [r.status for r in step.results] == [
        a.ActionStatus.OK,
        a.ActionStatus.FAILED,
        a.ActionStatus.SKIPPED,
    ]
    assert step.results[1].error == "stopped: emergency stop (ctrl+alt+shift+escape pressed)"
