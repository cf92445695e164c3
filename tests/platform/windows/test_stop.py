"""Stopping SendInput input midway, against the fake Win32 API (issue 15 item 1).

The fake API stands in for the desktop: the stop is set from inside it during its
Nth SendInput call, so what reached it after the stop is counted exactly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import pytest

from holodesk.platform.base import InputDriver
from holodesk.platform.errors import InputInterruptedError
from holodesk.platform.windows import backend as win32
from holodesk.platform.windows import structs as s
from tests.platform.windows.conftest import MONITORS
from tests.platform.windows.fake_api import FakeWinApi

pytestmark = pytest.mark.abuse

STOP_AT = 3  # SendInput calls the desktop receives before the stop


class StoppingApi(FakeWinApi):
    """Sets `signal` during its STOP_AT-th SendInput call; remembers the calls then."""

    def __init__(self, signal: threading.Event) -> None:
        super().__init__(MONITORS)
        self.signal = signal
        self.at_stop: int | None = None

    def send_input(self, events: Sequence[s.INPUT]) -> int:
        sent = super().send_input(events)
        if len(self.batches) == STOP_AT:
            self.at_stop = len(self.batches)
            self.signal.set()
        return sent


ACTIONS: dict[str, Callable[[InputDriver], None]] = {
    "type": lambda driver: driver.type_text("abcdefghijklmnopqrst" * 5_000),
    "type-lines": lambda driver: driver.type_text("ab\n" * 50_000),
    "scroll": lambda driver: driver.scroll(100, 100, 0, 1_000_000),
    "drag": lambda driver: driver.drag([(100 + i % 50, 100) for i in range(1000)], duration_s=60),
}


@pytest.mark.parametrize("name", ACTIONS)
def test_a_stop_cuts_the_action_off(name: str) -> None:
    """Proves: long typing, scrolling and dragging send no further SendInput batch
    after the stop (but a drag's button release), and leave nothing held."""
    signal = threading.Event()
    api = StoppingApi(signal)
    driver = win32.create(api=api).input
    with pytest.raises(InputInterruptedError), driver.stoppable(signal):
        ACTIONS[name](driver)
    assert api.at_stop is not None
    releases = 1 if name == "drag" else 0
    assert len(api.batches) - api.at_stop == releases
    assert driver.held() == ((), ())
