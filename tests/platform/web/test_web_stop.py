"""Stopping web input midway, in headless Chromium, counted by the page (issue 15 item 1)."""

from __future__ import annotations

import time

import pytest

from holodesk.platform.web.backend import WebBackend
from tests.platform.stopping import GRACE_MS, LONG_TEXT, type_until_stopped
from tests.platform.web.support import WebTarget

pytestmark = [pytest.mark.abuse, pytest.mark.web]

# Each input event's wall-clock time (ms since the epoch, as time.time() * 1000).
_STAMP_INPUT = """(() => {
  window.inputTimes = [];
  document.getElementById('field').addEventListener('input', () => {
    window.inputTimes.push(performance.timeOrigin + performance.now());
  });
})()"""


def test_a_stop_cuts_typing_off(web: WebBackend) -> None:
    """Proves: inserting 120,000 characters, stopped 0.3 s in, raises at once and the
    page sees no input more than 100 ms after the stop (the driver used to insert the
    whole text in one call)."""
    WebTarget(web).focus("line")
    web.page.evaluate(_STAMP_INPUT)
    stopped = type_until_stopped(web.input)
    stop_wall_ms = (time.time() - (time.monotonic() - stopped)) * 1000
    times: list[float] = web.page.evaluate("window.inputTimes")
    typed = len(web.page.evaluate("document.getElementById('field').value"))
    assert [t for t in times if t > stop_wall_ms + GRACE_MS] == []
    assert 0 < typed < len(LONG_TEXT)
