"""Stopping portal input midway, through the stand-in portal on Xvfb, counted by the
probe app (issue 15 item 1)."""

from __future__ import annotations

import threading

import pytest

from holodesk.platform.base import Region
from holodesk.platform.errors import InputInterruptedError
from holodesk.platform.text import TEXT_CHUNK_CHARS
from holodesk.platform.wayland.uinput import KEYBOARD_NAME, UinputInput
from tests.platform.stopping import (
    LONG_TEXT,
    drain,
    first_key_arrived,
    over_canvas,
    type_until_stopped,
)
from tests.platform.wayland.conftest import OpenWayland
from tests.platform.wayland.fake_uinput import FakeDevices
from tests.support.portal import PortalStandin
from tests.support.probe import ProbeApp

KEYSYM_CALL = "RemoteDesktop.NotifyKeyboardKeysym"

pytestmark = [pytest.mark.abuse, pytest.mark.x11]


def test_a_stop_cuts_typing_off(
    open_wayland: OpenWayland, shared_portal: PortalStandin, probe: ProbeApp
) -> None:
    """Proves: typing 120,000 characters as portal keysym calls, stopped as its first key
    arrives, raises at once, and what reaches the portal after the stop is at most the
    piece in flight (TEXT_CHUNK_CHARS keys, a press and a release each), counted
    where the calls arrive, not by a time limit: on a loaded machine the piece's calls
    can take more than 100 ms after the stop (six did, once in six runs)."""
    backend = open_wayland()
    try:
        over_canvas(probe, backend.input)
        before = len(shared_portal.calls(KEYSYM_CALL))
        stopped = type_until_stopped(backend.input, started=first_key_arrived(probe))
        drain(probe, backend.input)
    finally:
        backend.close()
    calls = shared_portal.calls(KEYSYM_CALL)[before:]
    after_stop = [c for c in calls if c["at"] > stopped]
    assert len(after_stop) <= 2 * TEXT_CHUNK_CHARS, len(after_stop)
    assert 0 < len(calls) < 2 * 2 * len(LONG_TEXT)  # a press and a release per key


def test_a_stop_cuts_uinput_typing_off() -> None:
    """Proves: on the uinput route (a fake /dev/uinput, the real driver), typing
    100,000 characters stops within the piece in flight once the stop is set."""
    signal = threading.Event()
    devices = FakeDevices()
    driver = UinputInput(Region(0, 0, 1280, 800), factory=devices, device_settle_s=0)
    keyboard = devices.named(KEYBOARD_NAME)
    at_stop: list[int] = []
    write = keyboard.write

    def write_then_stop(etype: int, code: int, value: int) -> None:
        write(etype, code, value)
        if len(keyboard.events) == 40 and not at_stop:
            at_stop.append(len(keyboard.events))
            signal.set()

    keyboard.write = write_then_stop  # type: ignore[method-assign]
    with pytest.raises(InputInterruptedError), driver.stoppable(signal):
        driver.type_text("abcdefghij" * 10_000)
    # At most the rest of the piece in flight: 32 characters of press, release, SYN.
    assert len(keyboard.events) - at_stop[0] <= TEXT_CHUNK_CHARS * 6
    driver.close()
