"""Stopping X11 input midway, on Xvfb, counted by the probe app (issue 15 item 1)."""

from __future__ import annotations

import threading

import pytest

from holodesk.platform.base import Backend
from holodesk.platform.errors import InputInterruptedError
from tests.platform.stopping import (
    LONG_TEXT,
    first_key_arrived,
    late_keys,
    over_canvas,
    stop_after,
    type_until_stopped,
)
from tests.support.probe import ProbeApp

pytestmark = [pytest.mark.abuse, pytest.mark.x11]


def test_a_stop_cuts_typing_off(x11: Backend, probe: ProbeApp) -> None:
    """Proves: typing 120,000 characters, stopped as its first key arrives, raises at
    once and no key reaches the app more than 100 ms after the stop (the driver used
    to queue the whole text, then send it all, seconds later)."""
    over_canvas(probe, x11.input)
    stopped = type_until_stopped(x11.input, started=first_key_arrived(probe))
    typed, late = late_keys(probe, x11.input, stopped)
    assert late == 0
    assert 0 < typed < 2 * len(LONG_TEXT)  # it had started, and was cut off


def test_a_stop_cuts_off_typing_that_waits_for_new_key_bindings(
    x11: Backend, probe: ProbeApp
) -> None:
    """Proves: characters without a key (bound to spare keycodes, with a settle and a
    linger delay between) are stopped during those delays too."""
    over_canvas(probe, x11.input)
    # More distinct keyless characters than Xvfb has spare keycodes: several rounds
    # of binding, each waiting out the previous round's linger (1 s).
    text = "".join(chr(code) for code in range(0x4E00, 0x4E00 + 400))
    stopped = type_until_stopped(x11.input, text, started=first_key_arrived(probe))
    typed, late = late_keys(probe, x11.input, stopped)
    assert late == 0
    assert 0 < typed < 2 * len(text)


def test_a_stop_cuts_off_a_long_drag_and_releases_its_button(x11: Backend, probe: ProbeApp) -> None:
    """Proves: a drag of 300 points over 30 s stops within its next pause, and its
    button comes back up."""
    canvas = probe.widgets["canvas"]
    path = [(canvas.x + 5 + i % 200, canvas.y + 5 + i % 100) for i in range(300)]
    signal = threading.Event()
    joined = stop_after(0.3, signal)
    with pytest.raises(InputInterruptedError), x11.input.stoppable(signal):
        x11.input.drag(path, duration_s=30)
    joined()
    assert x11.input.held() == ((), ())
    probe.wait_for_event("release", num=1)
