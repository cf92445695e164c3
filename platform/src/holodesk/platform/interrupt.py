"""The stop signal an input driver checks between the events of one action.

A type action of 100 KB or a drag with a thousand points is thousands of OS
events; an emergency stop must cut it off after the events already sent, not
after the last one. The caller (the client's executor) lends the driver a signal
for the duration of each action (`InputDriver.stoppable`); the driver checks it
before each bounded piece of input and sleeps on it instead of `time.sleep`.
A `threading.Event` is one; so is anything with the same two methods.
"""

from __future__ import annotations

import threading
from typing import Protocol


class StopSignal(Protocol):
    """Set from any thread when input must stop."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep up to `timeout` seconds; True as soon as the signal is set."""
        ...


class _Never:
    """The signal outside any `stoppable` block: never set, so a wait is a plain sleep."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def is_set(self) -> bool:
        return False

    def wait(self, timeout: float | None = None) -> bool:
        self._event.wait(timeout)
        return False


NEVER: StopSignal = _Never()
