"""What a doctor check reports."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


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
