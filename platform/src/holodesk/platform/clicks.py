"""Click counts for synthetic presses (macOS's kCGMouseEventClickState, DevTools'
clickCount).

An OS counts clicks for hardware input only: a posted event carries whatever count
its poster sets, and applications read it (NSEvent.clickCount, MouseEvent.detail)
to tell a double or triple click from single ones. So a backend counts like the
system does: a press of the same button, near the same spot, within the
double-click interval of the previous release continues the series. A composite
click(count=n) is a series by definition, whatever the time between its presses
(on a loaded machine, more than the interval can pass between two of them).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Hashable, Iterator

# How far (in the caller's units: points, CSS px) a press may stray from the previous
# one and still continue it.
CLICK_SLOP = 4.0


class ClickCounter:
    """The click state of each press and release."""

    def __init__(
        self,
        interval: Callable[[], float],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._interval = interval
        self._clock = clock
        self._button: Hashable = None
        self._state = 0
        self._where = (math.nan, math.nan)
        self._released_at = -math.inf
        self._series = False

    @contextlib.contextmanager
    def series(self) -> Iterator[None]:
        """The presses inside form one multi-click, starting from a single click."""
        self._series, self._state = True, 0
        try:
            yield
        finally:
            self._series = False

    def press(self, button: Hashable, x: float, y: float) -> int:
        continues = button == self._button and (
            self._series
            or (
                self._clock() - self._released_at <= self._interval()
                and math.dist((x, y), self._where) <= CLICK_SLOP
            )
        )
        self._state = self._state + 1 if continues else 1
        self._button = button
        self._where = (x, y)
        return self._state

    def release(self, button: Hashable) -> int:
        """The state of the press this release ends (1 for a release without one)."""
        self._released_at = self._clock()
        if button != self._button or self._state == 0:
            return 1
        return self._state
