"""What a doctor check reports."""

from __future__ import annotations

import enum
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ParamSpec

P = ParamSpec("P")


class Status(enum.Enum):
    OK = "ok"
    # Works, with a limit worth knowing about (e.g. a certificate expiring soon).
    WARN = "warn"
    # Will stop agents from running here until fixed.
    FAIL = "fail"
    # Not checked (nothing to check, or an earlier failure makes it moot); says why.
    SKIP = "skip"


@dataclass(frozen=True)
class Finding:
    check: str
    status: Status
    # What was found, in a sentence.
    detail: str
    # What to do about it; empty when there is nothing to do.
    fix: str = ""

    def as_dict(self) -> dict[str, str]:
        return {
            "check": self.check,
            "status": self.status.value,
            "detail": self.detail,
            "fix": self.fix,
        }


def failed(findings: Iterable[Finding]) -> bool:
    return any(f.status is Status.FAIL for f in findings)


CRASH_FIX = (
    "a failure holodesk does not know yet, or a bug in it: report it with this line "
    "(the other checks still ran)"
)


def crashed(check: str, error: Exception, doing: str = "") -> Finding:
    """The finding for a check that raised what it does not handle: type, message, where.

    `doing` says what crashed when it is not the check itself (e.g. closing the backend).
    """
    cause = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    frames = traceback.extract_tb(error.__traceback__)
    where = f" (in {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    detail = f"{doing or f'the {check} check'} crashed: {cause}{where}"
    return Finding(check, Status.FAIL, detail, CRASH_FIX)


def guarded(check: str, run: Callable[P, Finding], *args: P.args, **kwargs: P.kwargs) -> Finding:
    """`run(*args, **kwargs)`, or the finding for its crash: a diagnostic must not die
    of the fault it is diagnosing, and the checks after it must still run."""
    try:
        return run(*args, **kwargs)
    except Exception as error:  # reported with its cause, not hidden; Ctrl-C still ends it
        return crashed(check, error)
