"""Stopping wlroots input midway on a real sway, counted by the Tk probe on its XWayland
(XWayland stamps events with its CLOCK_MONOTONIC milliseconds, as Xvfb does)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from holodesk.platform.base import Backend
from holodesk.platform.errors import InputInterruptedError
from holodesk.platform.select import open_backend
from tests.platform.stopping import (
    LONG_TEXT,
    first_key_arrived,
    late_keys,
    over_canvas,
    stop_after,
    type_until_stopped,
)
from tests.platform.wlroots.sway import Sway
from tests.support.probe import ProbeApp

pytestmark = [pytest.mark.abuse, pytest.mark.wlroots]


@pytest.fixture
def wlroots(sway: Sway) -> Iterator[Backend]:
    backend = open_backend("wlroots", socket=sway.wayland_socket)
    yield backend
    backend.close()


def test_a_stop_cuts_typing_off(wlroots: Backend, sway_probe: ProbeApp) -> None:
    """Proves: typing 120,000 characters, stopped as its first key arrives, raises at
    once and no key reaches the app more than 100 ms after the stop."""
    over_canvas(sway_probe, wlroots.input)
    stopped = type_until_stopped(wlroots.input, started=first_key_arrived(sway_probe))
    typed, late = late_keys(sway_probe, wlroots.input, stopped)
    assert late == 0
    assert 0 < typed < 2 * len(LONG_TEXT)


def test_a_stop_cuts_off_typing_that_rebinds_the_keymap(
    wlroots: Backend, sway_probe: ProbeApp
) -> None:
    """Proves: characters without a key (bound to spare keys, the keymap uploaded
    again as they run out) are stopped too."""
    over_canvas(sway_probe, wlroots.input)
    text = "".join(chr(code) for code in range(0x4E00, 0x4E00 + 400)) * 20
    stopped = type_until_stopped(wlroots.input, text, started=first_key_arrived(sway_probe))
    typed, late = late_keys(sway_probe, wlroots.input, stopped)
    assert late == 0
    assert 0 < typed < 2 * len(text)


def test_a_stop_cuts_off_a_long_drag_and_releases_its_button(
    wlroots: Backend, sway_probe: ProbeApp
) -> None:
    """Proves: a drag of 300 points over 30 s stops within its next pause, and its
    button comes back up."""
    canvas = sway_probe.widgets["canvas"]
    path = [(canvas.x + 5 + i % 200, canvas.y + 5 + i % 100) for i in range(300)]
    signal = threading.Event()
    joined = stop_after(0.3, signal)
    with pytest.raises(InputInterruptedError), wlroots.input.stoppable(signal):
        wlroots.input.drag(path, duration_s=30)
    joined()
    assert wlroots.input.held() == ((), ())
    sway_probe.wait_for_event("release", num=1)
