"""When to retry an HTTP call to a model server, and how long to wait first.

Retried: 408, 429 and 5xx answers (an overloaded or restarting server), and
connection errors and timeouts. Not retried: any other 4xx, which means the
request itself is wrong and would fail again. The wait is exponential backoff
with jitter (so many daemons that hit one overloaded cluster at once do not come
back in lockstep), unless the server says when to come back with Retry-After.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

RETRYABLE_STATUS = frozenset({408, 429})


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUS or 500 <= status <= 599


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Retry-After as seconds from now: delta-seconds or an HTTP date; None if absent or bad."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    backoff_s: float = 0.5
    backoff_max_s: float = 20.0
    # A server asking for a longer pause than this is treated as down: waiting
    # minutes inside one agent step helps nobody.
    retry_after_max_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, not {self.max_retries}")
        if self.backoff_s < 0 or self.backoff_max_s < 0 or self.retry_after_max_s < 0:
            raise ValueError("backoff and Retry-After limits cannot be negative")

    def backoff(self, retry: int, rng: random.Random | None = None) -> float:
        """Pause before retry number `retry` (0-based): half fixed, half random ("equal jitter")."""
        ceiling = min(self.backoff_max_s, self.backoff_s * 2.0**retry)
        draw = (rng or random).random()
        return ceiling / 2.0 + draw * ceiling / 2.0

    def delay(self, retry: int, retry_after: float | None) -> float | None:
        """The pause before a retry, or None when the server's Retry-After is too long."""
        if retry_after is None:
            return self.backoff(retry)
        if retry_after > self.retry_after_max_s:
            return None
        return retry_after
