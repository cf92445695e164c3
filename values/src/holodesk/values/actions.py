"""The action values both sides share: the mouse buttons, the modifiers a click or a
drag holds, and what became of an action (the contract's ActionResult).

The daemon's dialects name buttons and modifiers and read results back (and tell a
model); the platform's input drivers press the buttons, the client presses the
modifiers (by their key names, `Modifier.value`, which are the key vocabulary's
MODIFIERS) and reports the results: all use these definitions, so a button, a
modifier or a status added to the contract is added once.

The actions themselves are not here: the daemon's are id-less kinds a policy decides
before the session gives them ids, the client's carry their ids and may be
Unsupported; see holodesk.client.actions and holodesk.daemon.actions.
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


class Modifier(enum.Enum):
    """A key held through a click or a drag (action.proto Modifier); the values are
    the key names the client presses."""

    CTRL = "ctrl"
    SHIFT = "shift"
    ALT = "alt"
    META = "meta"


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
