"""Time the daemon spent changing a policy's weights (TrainerService), which a
step's --step-timeout-s does not count.

Why: an update pauses generation (seconds for a 12B checkpoint read from disk), and
in modes WAIT and ABORT a step in flight may take a whole update longer than it
would have. A step timeout that counted that time would end sessions because a
trainer pushed weights, which an update must never do. The session's own
--max-session-s still counts wall-clock time: it is the operator's budget.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator


class UpdatePauses:
    def __init__(self) -> None:
        self._done_s = 0.0
        # Start times of updates in progress (one per policy at most).
        self._running: list[float] = []

    @contextlib.contextmanager
    def pausing(self) -> Iterator[None]:
        """Counts the block's time (an update, checks included)."""
        started = time.monotonic()
        self._running.append(started)
        try:
            yield
        finally:
            self._running.remove(started)
            self._done_s += time.monotonic() - started

    def total_s(self) -> float:
        """Seconds spent in updates so far, those in progress included (updates of
        two policies at once count once each: a step waits on one of them only, and
        over-crediting a step is the safe side of a timeout that exists to catch a
        stuck policy)."""
        now = time.monotonic()
        return self._done_s + sum(now - started for started in self._running)
