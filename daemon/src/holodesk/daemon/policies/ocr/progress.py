"""Where a session is in its plan, kept in the notes of its own earlier steps.

The policy is shared by all sessions and keeps no per-session state; the session
history already holds each step's note and the results the client reported. So
every planned step's note starts with a marker, `[ocr 2/5]` for "acted on plan
step 2 of 5" or `[ocr 2/5 retry 1]` for "waited: step 2's text was not on screen
yet", and the next step follows from the latest markers. Markers carry absolute
step numbers, so a history window that dropped old steps loses nothing.

Typing into a field is checked before the plan moves on (the screen must show
the text): `[ocr 2/5 type 1]` is "typed step 2's text, try 1, not checked yet",
`[ocr 2/5 type 1 look]` "the field did not show it; waited to look again".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from holodesk.daemon.actions import ActionStatus, HistoryStep

_MARKER = re.compile(r"^\[ocr (\d+)/(\d+)(?: retry (\d+)| type (\d+)( look)?)?\]")
# A step whose actions did not all run is tried again.
_NOT_RUN = (
    ActionStatus.FAILED,
    ActionStatus.REJECTED,
    ActionStatus.SKIPPED,
    ActionStatus.NOT_DELIVERED,
)


@dataclass(frozen=True)
class Progress:
    # 0-based index of the plan step to do next.
    step: int = 0
    # Earlier tries of that step that did not complete (waits, failed actions).
    retries: int = 0
    # The client's error for the last try whose actions failed, if any.
    error: str = ""
    # Tries of a type step whose effect is still to be checked (0: none pending).
    typed: int = 0
    # Whether the latest try's check already waited once for the screen to show it.
    looked: bool = False


def marker(
    step: int, total: int, retry: int | None = None, typed: int = 0, looked: bool = False
) -> str:
    """The note prefix for 0-based plan step `step` of `total`."""
    suffix = "" if retry is None else f" retry {retry}"
    if typed:
        suffix = f" type {typed}" + (" look" if looked else "")
    return f"[ocr {step + 1}/{total}{suffix}]"


def progress_from_history(history: Sequence[HistoryStep]) -> Progress:
    progress = Progress()
    for past in history:
        found = _MARKER.match(past.note)
        if found is None:
            continue  # not one of ours
        index = int(found.group(1)) - 1
        if found.group(3) is not None:
            progress = Progress(index, int(found.group(3)))
        elif failed := [r for r in past.results if r.status in _NOT_RUN]:
            tries = progress.retries + 1 if progress.step == index else 1
            error = failed[0].error or failed[0].status.value
            progress = Progress(index, tries, error)
        elif found.group(4) is not None:
            # Typed; the next look checks that the field shows it.
            progress = Progress(index, typed=int(found.group(4)), looked=bool(found.group(5)))
        else:
            progress = Progress(index + 1, 0)
    return progress
