"""Rate limits: token buckets for actions and for the characters they type.

A bucket holds `rate` tokens per second sustained, `burst` back to back.
Reservations may run it into debt, so concurrent callers queue fairly and each
learns exactly how long to wait; nothing is ever refused here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from holodesk.client import actions as a
from holodesk.client.safety.bounds import typed_characters
from holodesk.client.safety.settings import SafetySettings


class TokenBucket:
    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"a token bucket needs rate > 0 and burst >= 1, got {rate}, {burst}")
        self._rate = rate
        self._burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        self._lock = threading.Lock()

    def reserve(self, tokens: float = 1.0) -> float:
        """Take `tokens`; the seconds to wait before using them (0.0 when they were saved)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
            self._last = now
            self._tokens -= tokens
            return 0.0 if self._tokens >= 0 else -self._tokens / self._rate


class RateLimit:
    """Every action costs one action token; a type action (or a URL typed into an
    address bar) also costs one character token per character, so a few actions
    carrying long texts are held to the typing rate as many short ones are."""

    def __init__(self, settings: SafetySettings, clock: Callable[[], float] = time.monotonic):
        actions = settings.max_actions_per_second
        chars = settings.max_chars_per_second
        self._actions = TokenBucket(actions, settings.burst_size, clock) if actions else None
        self._chars = TokenBucket(chars, settings.char_burst_size, clock) if chars else None

    def reserve(self, action: a.Action) -> float:
        """Take the action's tokens; the seconds to wait before running it."""
        delay = self._actions.reserve() if self._actions is not None else 0.0
        count = typed_characters(action)
        if count and self._chars is not None:
            delay = max(delay, self._chars.reserve(count))
        return delay
