"""Stopping VNC input midway, on TigerVNC's Xvnc, counted by the probe app (issue 15 item 1)."""

from __future__ import annotations

import pytest

from holodesk.platform.base import Backend
from tests.platform.stopping import (
    LONG_TEXT,
    first_key_arrived,
    late_keys,
    over_canvas,
    type_until_stopped,
)
from tests.support.probe import ProbeApp

pytestmark = [pytest.mark.abuse, pytest.mark.vnc]


def test_a_stop_cuts_typing_off(vnc: Backend, probe: ProbeApp) -> None:
    """Proves: typing 120,000 characters over RFB, stopped as its first key arrives,
    raises at once and no key reaches the app more than 100 ms after the stop (the
    driver used to send the whole text in one write, which the server then typed to
    the end)."""
    over_canvas(probe, vnc.input)
    stopped = type_until_stopped(vnc.input, started=first_key_arrived(probe))
    typed, late = late_keys(probe, vnc.input, stopped)
    assert late == 0
    assert 0 < typed < 2 * len(LONG_TEXT)
