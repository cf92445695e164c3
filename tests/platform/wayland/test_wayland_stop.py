"""Stopping portal input midway, through the stand-in portal on Xvfb, counted by the
probe app (issue 15 item 1)."""

from __future__ import annotations

import pytest

from tests.platform.stopping import (
    LONG_TEXT,
    first_key_arrived,
    late_keys,
    over_canvas,
    type_until_stopped,
)
from tests.platform.wayland.conftest import OpenWayland
from tests.support.probe import ProbeApp

pytestmark = pytest.mark.x11


def test_a_stop_cuts_typing_off(open_wayland: OpenWayland, probe: ProbeApp) -> None:
    """Proves: typing 120,000 characters as portal keysym calls, stopped as its first key arrives,
    raises at once and no key reaches the app more than 100 ms after the stop."""
    backend = open_wayland()
    try:
        over_canvas(probe, backend.input)
        stopped = type_until_stopped(backend.input, started=first_key_arrived(probe))
        typed, late = late_keys(probe, backend.input, stopped)
    finally:
        backend.close()
    assert late == 0
    assert 0 < typed < 2 * len(LONG_TEXT)
