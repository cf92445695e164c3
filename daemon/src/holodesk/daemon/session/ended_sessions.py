"""Sessions that left the registry, remembered for a while: who ran them and their
recording, so AgentService.ReportReward can still reach them after they ended.

Apart from the recorder because it is a bounded map with a time to live, nothing
about writing: at most `capacity` entries (the oldest go first), each forgotten
`ttl_s` after its session left. Generic in what is remembered of the recording
(the recorder's track), so it knows nothing of the writer.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

# How many ended sessions ReportReward can still reach, and for how long.
ENDED_CAPACITY = 10_000
ENDED_TTL_S = 24 * 3600.0

T = TypeVar("T")


@dataclass
class Ended(Generic[T]):
    principal: str
    track: T | None
    left_at: float


class EndedSessions(Generic[T]):
    """Ended sessions by id, oldest first, bounded in number and in age."""

    def __init__(self, capacity: int = ENDED_CAPACITY, ttl_s: float = ENDED_TTL_S) -> None:
        self._ended: OrderedDict[str, Ended[T]] = OrderedDict()
        self._capacity = capacity
        self._ttl = ttl_s

    def remember(self, session_id: str, ended: Ended[T]) -> None:
        self._ended[session_id] = ended
        self._ended.move_to_end(session_id)
        while len(self._ended) > self._capacity:
            self._ended.popitem(last=False)
        self.expire()

    def get(self, session_id: str) -> Ended[T] | None:
        """The session's entry as remembered (expire() first to drop the stale ones)."""
        return self._ended.get(session_id)

    def values(self) -> Iterable[Ended[T]]:
        return self._ended.values()

    def expire(self) -> None:
        """Forget the sessions that left more than ttl_s ago."""
        cutoff = time.monotonic() - self._ttl
        while self._ended:
            first = next(iter(self._ended.values()))
            if first.left_at >= cutoff:
                break
            self._ended.popitem(last=False)
