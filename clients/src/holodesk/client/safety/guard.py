"""Every safety rule, applied on the backend thread just before each action runs.

Order: the allowlist and the text bound, then the human (confirm mode), then the
rate limit (actions and typed characters), then
the fail-safe corner last, so that a pointer flung into a corner while a
confirmation or a rate wait was pending still counts. The chord denylist is not
judged here but where the keys are sent (`gate`): only there is it known which
keys an action presses while which others are held.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from holodesk.client import actions as a
from holodesk.client.halt import Halt, HaltReason
from holodesk.client.safety import confirm as confirming
from holodesk.client.safety.bounds import batch_refusal, text_refusal
from holodesk.client.safety.corner import FailSafe
from holodesk.client.safety.keygate import KeyGate
from holodesk.client.safety.rate import RateLimit
from holodesk.client.safety.rules import action_kind, disallowed
from holodesk.client.safety.settings import SafetySettings
from holodesk.platform.base import Backend, InputDriver

# Sleeps up to the given seconds; True when the halt came first.
Pause = Callable[[float, Halt], bool]

# Kinds that move nothing on the desktop: no confirmation, no rate limit.
_PASSIVE = frozenset({"wait"})


def _pause(seconds: float, halt: Halt) -> bool:
    return halt.wait(seconds)


class SafetyGuard:
    def __init__(
        self,
        settings: SafetySettings,
        backend: Backend,
        *,
        pause: Pause = _pause,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._backend = backend
        self._pause = pause
        self._rate = RateLimit(settings, clock)
        self._fail_safe = (
            FailSafe(backend.input, backend.screen, settings.fail_safe_px)
            if settings.fail_safe and backend.observes_user_pointer
            else None
        )

    def admit(self, action: a.Action, halt: Halt) -> str:
        """Why the action is REJECTED ('' to run it; check the halt before running)."""
        settings = self._settings
        reason = disallowed(action, settings.allowed_kinds) or text_refusal(
            action, settings.max_type_chars
        )
        if reason or isinstance(action, a.Done | a.Fail | a.AskUser):
            return reason
        if action_kind(action) not in _PASSIVE:
            if settings.confirm is not None:
                reason = confirming.ask(settings.confirm, action, halt)
                if reason or halt.is_set():
                    return reason
            delay = self._rate.reserve(action)
            if delay > 0 and self._pause(delay, halt):
                return ""
        if self._fail_safe is not None:
            reason = self._fail_safe.check()
            if reason:
                halt.trigger(HaltReason.FAIL_SAFE, reason)
        return reason

    def admit_batch(self, actions: Sequence[a.Action]) -> str:
        """Why the whole batch is refused ('' to run it): more actions than allowed."""
        return batch_refusal(actions, self._settings.max_batch_actions)

    def gate(self, driver: InputDriver) -> InputDriver:
        """The driver to send all input through: it refuses (ChordDeniedError) any call
        whose key presses, with what is held at that moment, make a denied chord."""
        return KeyGate(driver, self._settings.chords_on(self._backend.os))

    def ran(self, action: a.Action) -> None:
        """After an action ran (or tried to): the pointer is where the client left it."""
        if self._fail_safe is not None:
            self._fail_safe.note_position()
