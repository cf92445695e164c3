"""Where an engine whose generation cannot change weights midway (transformers'
`generate()`) lets a weight update in: between generations.

Generations pass the gate one at a time (the engine has one worker thread); an
update closes it, so no new generation starts, waits until the running one is
over, changes the weights with nothing running, and opens it again. To stop the
running generation instead of waiting for it (mode ABORT), the update sets
`interrupt`, which the generation's StoppingCriteria reads after every token; the
engine then runs that request again from its first token once the gate opens, so
its caller gets one answer of one version.

Threads, not asyncio: the generation runs on the engine's worker thread and the
update on another, and both block while they wait.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

# How often a generation waiting at a closed gate looks at its abort flag.
_POLL_S = 0.05


class GateAbortedError(Exception):
    """The request was aborted while it waited for an update to finish."""


class GenerationGate:
    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._closed = False
        self._generating = False
        # Set by an update in mode ABORT: the running generation stops at its next token.
        self.interrupt = threading.Event()
        # Generations stopped by `interrupt` (each runs again), since the engine started.
        self.interrupted = 0

    @property
    def generating(self) -> bool:
        return self._generating

    @contextmanager
    def generation(self, aborted: threading.Event) -> Iterator[None]:
        """Hold the gate for one generation; waits while an update runs (raises
        GateAbortedError if the request is aborted meanwhile)."""
        with self._condition:
            while self._closed:
                if aborted.is_set():
                    raise GateAbortedError
                self._condition.wait(_POLL_S)
            self._generating = True
        try:
            yield
        finally:
            with self._condition:
                self._generating = False
                self._condition.notify_all()

    def note_interrupted(self) -> None:
        """The running generation stopped for `interrupt` and will run again."""
        with self._condition:
            self.interrupted += 1

    @contextmanager
    def closed(self, interrupt: bool) -> Iterator[float]:
        """Close the gate and wait for the running generation to end (stopping it
        at its next token when `interrupt`); yields the time.monotonic() at which
        the gate closed, and opens it again on exit."""
        with self._condition:
            self._closed = True
            closed_at = time.monotonic()
        try:
            if interrupt:
                self.interrupt.set()
            with self._condition:
                while self._generating:
                    self._condition.wait()
            self.interrupt.clear()
            yield closed_at
        finally:
            self.interrupt.clear()
            with self._condition:
                self._closed = False
                self._condition.notify_all()
