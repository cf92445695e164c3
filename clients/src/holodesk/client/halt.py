"""Why the client must stop acting, shared by every thread of a session.

The backend thread checks it between actions (and a wait sleeps on it); the
stream reader, the emergency-stop hotkey and the fail-safe corner set it from
their own threads. A lost stream only pauses the session (it clears once the
session is resumed), and the running action finishes; any other reason is final,
and `final_signal` (set with it) interrupts the running action between its input
events too (see holodesk.platform.interrupt).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from dataclasses import dataclass


class HaltReason(enum.Enum):
    # The stream to the daemon dropped: pause until the session is resumed.
    LINK_LOST = "link_lost"
    # Ctrl-C, a cancel by the caller, or the end of the session.
    USER = "user"
    EMERGENCY_STOP = "emergency_stop"
    FAIL_SAFE = "fail_safe"
    # The daemon ended the session (an operator's cancel, a time limit) while it ran.
    DAEMON_ENDED = "daemon_ended"


@dataclass(frozen=True)
class HaltState:
    reason: HaltReason
    message: str

    @property
    def final(self) -> bool:
        return self.reason is not HaltReason.LINK_LOST


Listener = Callable[[HaltState], None]


class Halt:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._event = threading.Event()
        # Set with the first final reason and never cleared: what input drivers check.
        self._final = threading.Event()
        self._state: HaltState | None = None
        self._listeners: list[Listener] = []

    @property
    def state(self) -> HaltState | None:
        return self._state

    def is_set(self) -> bool:
        return self._event.is_set()

    @property
    def final_signal(self) -> threading.Event:
        """Set once a final halt comes: the stop signal lent to the input driver for each
        action, so a stop cuts a running action off (a lost link lets it finish)."""
        return self._final

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep up to `timeout` seconds; True as soon as a halt is triggered."""
        return self._event.wait(timeout)

    def trigger(self, reason: HaltReason, message: str) -> bool:
        """Halt; False if a halt that must not be overridden is already in force.

        A final reason replaces a lost link (a stop pressed while reconnecting
        must win), never the other way round, and the first final reason stays.
        """
        with self._lock:
            current = self._state
            if current is not None and (current.final or reason is HaltReason.LINK_LOST):
                return False
            state = HaltState(reason, message)
            self._state = state
            if state.final:
                self._final.set()
            self._event.set()
            listeners = list(self._listeners)
        for listener in listeners:
            listener(state)
        return True

    def link_restored(self) -> None:
        """The session is resumed: acting may continue, unless a final halt came meanwhile."""
        with self._lock:
            if self._state is not None and not self._state.final:
                self._state = None
                self._event.clear()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` (on the triggering thread) for every halt; returns an unsubscribe."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe
