"""The platform conformance suite through the wlroots backend on a native Wayland app.

tests/apps/gtk_conformance_app.py (GTK 3 on Wayland, no XWayland in between) on a
real headless sway 1.7 receives every button, click count, modifier, move, drag,
four scroll directions, chords, key down/up, Unicode, format characters and
multi-line text from our virtual pointer and keyboard: each case on a fresh
window, with no retry, so a case that fails once fails the test.

The native app caught what XWayland hid: wlroots keeps no modifier state for a
virtual keyboard, so we send it (wlroots.input). The same suite runs through
XWayland's Tk probe too (test_wlroots_xwayland_conformance), also without retries.
"""

from __future__ import annotations

import pytest

from tests.platform.conformance import conformance_test
from tests.platform.wlroots.gtk_target import GtkTarget

pytestmark = pytest.mark.wlroots


@pytest.fixture
def target(native_target: GtkTarget) -> GtkTarget:
    return native_target


test_conformance = conformance_test()
