"""The client's actions: the contract's action space, coordinates in frame pixels.

Only convert.py builds these from protobuf; everything else works on these values.

Why these are not the daemon's classes (holodesk.daemon.actions): the daemon's kinds
exist before they have an id (a policy decides them, the session ids them) and carry
what its dialects need (a geometry.Point the coordinate mapping passes through, the
model-facing descriptions). The client receives an id and a kind in one message, so
each action here is one flat value with its action_id and frame_id; modifiers are
held as key names (`Modifier.value`: what the executor and the safety guard press
and judge); and a kind or enum value this client cannot read is kept as Unsupported,
so it fails with a result instead of breaking the batch. What ties the two: the same
kinds with the same fields, one per action.proto Action.kind
(tests/client/test_action_kinds_agree.py), and the values both import from
holodesk.values (MouseButton, Modifier, ActionStatus, ActionResult).
"""

from __future__ import annotations

from dataclasses import dataclass

from holodesk.client.generation import Generation
from holodesk.platform.base import MouseButton

# What became of an action, and the modifiers' names: the contract's values, defined
# once in holodesk.values (the daemon uses the same); named here with the action space.
from holodesk.values.actions import ActionResult as ActionResult
from holodesk.values.actions import ActionStatus as ActionStatus
from holodesk.values.actions import Modifier as Modifier


@dataclass(frozen=True)
class FramePoint:
    """A point in the pixels of the frame named by the action's frame_id."""

    x: float
    y: float


@dataclass(frozen=True, kw_only=True)
class BaseAction:
    action_id: str
    # Empty for actions without coordinates.
    frame_id: str = ""


@dataclass(frozen=True, kw_only=True)
class Click(BaseAction):
    point: FramePoint
    button: MouseButton = MouseButton.LEFT
    count: int = 1
    # Key names, each a Modifier's value.
    modifiers: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Move(BaseAction):
    point: FramePoint


@dataclass(frozen=True, kw_only=True)
class MouseDown(BaseAction):
    button: MouseButton = MouseButton.LEFT
    # When set, the pointer moves there first.
    point: FramePoint | None = None


@dataclass(frozen=True, kw_only=True)
class MouseUp(BaseAction):
    button: MouseButton = MouseButton.LEFT
    point: FramePoint | None = None


@dataclass(frozen=True, kw_only=True)
class Drag(BaseAction):
    path: tuple[FramePoint, ...]
    button: MouseButton = MouseButton.LEFT
    modifiers: tuple[str, ...] = ()
    # 0 lets the client choose.
    duration_ms: int = 0


@dataclass(frozen=True, kw_only=True)
class Scroll(BaseAction):
    point: FramePoint
    dx: int = 0
    dy: int = 0


@dataclass(frozen=True, kw_only=True)
class TypeText(BaseAction):
    text: str


@dataclass(frozen=True, kw_only=True)
class KeyChord(BaseAction):
    keys: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class KeyDown(BaseAction):
    key: str


@dataclass(frozen=True, kw_only=True)
class KeyUp(BaseAction):
    key: str


@dataclass(frozen=True, kw_only=True)
class Wait(BaseAction):
    duration_ms: int


@dataclass(frozen=True, kw_only=True)
class Done(BaseAction):
    answer: str = ""


@dataclass(frozen=True, kw_only=True)
class Fail(BaseAction):
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class AskUser(BaseAction):
    question: str


@dataclass(frozen=True, kw_only=True)
class Navigate(BaseAction):
    """Open a URL: through the backend's navigator, else the focused browser's address bar."""

    url: str


@dataclass(frozen=True, kw_only=True)
class Unsupported(BaseAction):
    """An action this client cannot read (unknown kind or enum value): it fails."""

    reason: str


Action = (
    Click
    | Move
    | MouseDown
    | MouseUp
    | Drag
    | Scroll
    | TypeText
    | KeyChord
    | KeyDown
    | KeyUp
    | Wait
    | Done
    | Fail
    | AskUser
    | Navigate
    | Unsupported
)

# Handled by the session, never executed as input.
ControlAction = Done | Fail | AskUser


@dataclass(frozen=True)
class ActionBatch:
    """One Actions message: a model step's actions, to run in order."""

    step: int
    actions: tuple[Action, ...]
    thought: str = ""
    # What the model generated for this step; None for policies without a model.
    generation: Generation | None = None
