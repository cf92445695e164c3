"""The action values both sides share: the mouse buttons, and what became of an
action (the contract's ActionResult).

The daemon's dialects name buttons and read results back (and tell a model); the
platform's input drivers press the buttons and the client reports the results: all
use these definitions, so a button or a status added to the contract is added once.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class MouseButton(enum.Enum):
    LEFT = "left"
    RIGHT = "right"
    MIDDLE = "middle"
    BACK = "back"  # the side buttons: X buttons 8 and 9, Windows XBUTTON1/2
    FORWARD = "forward"


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
