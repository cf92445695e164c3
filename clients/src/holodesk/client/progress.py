"""Progress of a long batch command (locate, export, replay) on stderr.

On a terminal a rich progress bar (done/total, elapsed, time left) with the
command's per-item lines printed above it; anywhere else (a pipe, a log file, CI)
only those lines, so logs stay greppable and hold no escape codes. stdout is never
touched: it stays the command's own output (a table, JSON).
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class BatchProgress:
    """`with BatchProgress("locating", total=n) as bar: bar.note(...); bar.advance()`."""

    def __init__(self, description: str, total: int, *, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._terminal = _is_terminal(self._stream)
        self.console = Console(file=self._stream, highlight=False, force_terminal=self._terminal)
        self._description = description
        self._total = total
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    @property
    def shows_bar(self) -> bool:
        return self._terminal

    def __enter__(self) -> BatchProgress:
        if self._terminal:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("left"),
                TimeRemainingColumn(),
                console=self.console,
            )
            self._progress.start()
            self._task = self._progress.add_task(self._description, total=self._total)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            if error is None and self._task is not None:
                # Done: items the work skipped (filtered, already done) count as done.
                self._progress.update(self._task, completed=self._total)
            self._progress.stop()
            self._progress = None

    def set_total(self, total: int) -> None:
        """When the work left is known only after starting (a resumed batch)."""
        self._total = total
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, total=total)

    def describe(self, description: str) -> None:
        """A new description for the bar (running counts: done, lost, retried)."""
        self._description = description
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, description=description)

    def advance(self, count: int = 1) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, count)
            self._progress.refresh()  # else a note printed next shows the old count

    def note(self, text: str, *, markup: bool = False) -> None:
        """One line for the person: above the bar, or on its own line. Pass text
        already made inert (`shown`); markup only for the command's own styling."""
        self.console.print(text, markup=markup, soft_wrap=True)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except ValueError:  # a closed stream
        return False
