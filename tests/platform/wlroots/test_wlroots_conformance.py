"""The platform conformance suite through the wlroots backend on a real headless sway.

Every button, click count, modifier, move, drag, four scroll directions, chords,
key down/up, Unicode, format characters and multi-line text, as the Tk probe on
sway's XWayland receives them from our virtual pointer and keyboard.
"""

from __future__ import annotations

import pytest

from tests.platform.conformance import conformance_test

pytestmark = pytest.mark.wlroots

test_conformance = conformance_test()
