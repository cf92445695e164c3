"""What became of one action: the values of the contract's ActionResult.

The client reports them, the daemon reads them back (and tells a model); both use
these two definitions, so a status added to the contract is added once.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ActionStatus(enum.Enum):
    OK = "ok"
    FAILED = "failed"
    REJECTED = "rejected"
    SKIPPED = "skipped"
    # Never started: the batch did not reach the client, or its stream dropped first
    # (reported on resume).
    NOT_DELIVERED = "not_delivered"


@dataclass(frozen=True)
class ActionResult:
    action_id: str
    status: ActionStatus
    error: str = ""
    duration_ms: int = 0
