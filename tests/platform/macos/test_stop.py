"""Stopping Quartz input midway, against the fake Quartz API (issue 15 item 1).

The fake API stands in for the desktop: the stop is set from inside it when its
Nth event arrives, so what reached it after the stop is counted exactly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from holodesk.platform.base import SCROLL_CHUNK_NOTCHES, InputDriver
from holodesk.platform.errors import InputInterruptedError
from holodesk.platform.macos import backend as quartz
from holodesk.platform.macos.api import QuartzEvent
from tests.platform.macos.conftest import DISPLAYS, TERMINAL
from tests.platform.macos.fake_api import FakeQuartzApi

pytestmark = pytest.mark.abuse

STOP_AT = 10  # events the desktop receives before the stop


class StoppingApi(FakeQuartzApi):
    """Sets `signal` as its STOP_AT-th event arrives; remembers how many there were then."""

    def __init__(self, signal: threading.Event) -> None:
        super().__init__(DISPLAYS)
        self.signal = signal
        self.at_stop: int | None = None

    def post(self, event: QuartzEvent) -> None:
        super().post(event)
        if len(self.events) == STOP_AT:
            self.at_stop = len(self.events)
            self.signal.set()


ACTIONS: dict[str, tuple[Callable[[InputDriver], None], int]] = {
    # action, and how many events may follow the stop (the rest of the piece in flight)
    "type": (lambda driver: driver.type_text("abcdefghijklmnopqrst" * 5_000), 1),
    "type-lines": (lambda driver: driver.type_text("ab\n" * 50_000), 1),
    "scroll": (lambda driver: driver.scroll(100, 100, 0, 1_000_000), SCROLL_CHUNK_NOTCHES),
    "drag": (
        lambda driver: driver.drag([(100 + i % 50, 100) for i in range(1000)], duration_s=60),
        1,
    ),
}


@pytest.mark.parametrize("name", ACTIONS)
def test_a_stop_cuts_the_action_off(name: str) -> None:
    """Proves: long typing, scrolling and dragging stop right after the stop, within
    the piece in flight, and leave nothing held."""
    act, may_follow = ACTIONS[name]
    signal = threading.Event()
    api = StoppingApi(signal)
    driver = quartz.create(api=api, host=TERMINAL).input
    with pytest.raises(InputInterruptedError), driver.stoppable(signal):
        act(driver)
    assert api.at_stop is not None
    # A drag's button still comes up after the stop: releases are always sent.
    releases = 1 if name == "drag" else 0
    assert len(api.events) - api.at_stop <= may_follow + releases
    assert driver.held() == ((), ())
