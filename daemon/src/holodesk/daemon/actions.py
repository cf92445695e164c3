"""The action space of the contract as plain values.

Every pointer coordinate is in FRAME PIXELS (floats: the daemon maps model
coordinates exactly; the client rounds once, at the very end). A policy decides
action *kinds*; the session wraps each into an `Action` with a daemon-wide
unique id and the id of the frame its coordinates refer to.

Why the client has its own action classes (holodesk.client.actions) rather than
these: here a kind exists before it has an id (a dialect parses it, a policy decides
it, the session ids it), and the daemon's kinds carry what the dialects need
(geometry.Point that the coordinate mapping passes through, `map_points`,
`describe` for the model's history). The client receives id and kind in one message
and flattens them into one value, holds modifiers by their key names, and reads a
kind it does not know as Unsupported. What ties the two: the same kinds with the
same fields, each one of action.proto's Action.kind (tests/client/
test_action_kinds_agree.py), and the values both use from holodesk.values
(MouseButton, Modifier, ActionStatus, ActionResult).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from holodesk.daemon.geometry import Point, Size

# The contract's buttons, modifiers and what became of an action, defined once in
# holodesk.values (the platform presses the same buttons, the client holds the same
# modifiers and reports the same results); named here for the daemon's modules.
from holodesk.values.actions import ActionResult as ActionResult
from holodesk.values.actions import ActionStatus as ActionStatus
from holodesk.values.actions import Modifier as Modifier
from holodesk.values.actions import MouseButton as MouseButton


@dataclass(frozen=True)
class Click:
    point: Point
    button: MouseButton = MouseButton.LEFT
    count: int = 1
    modifiers: tuple[Modifier, ...] = ()


@dataclass(frozen=True)
class Move:
    point: Point


@dataclass(frozen=True)
class MouseDown:
    button: MouseButton = MouseButton.LEFT
    point: Point | None = None


@dataclass(frozen=True)
class MouseUp:
    button: MouseButton = MouseButton.LEFT
    point: Point | None = None


@dataclass(frozen=True)
class Drag:
    path: tuple[Point, ...]
    button: MouseButton = MouseButton.LEFT
    modifiers: tuple[Modifier, ...] = ()
    duration_ms: int = 0


@dataclass(frozen=True)
class Scroll:
    """Wheel notches at a point: dy > 0 scrolls down, dx > 0 scrolls right."""

    point: Point
    dx: int = 0
    dy: int = 0


@dataclass(frozen=True)
class TypeText:
    text: str


@dataclass(frozen=True)
class KeyChord:
    keys: tuple[str, ...]


@dataclass(frozen=True)
class KeyDown:
    key: str


@dataclass(frozen=True)
class KeyUp:
    key: str


@dataclass(frozen=True)
class Wait:
    duration_ms: int


@dataclass(frozen=True)
class Done:
    answer: str


@dataclass(frozen=True)
class Fail:
    reason: str


@dataclass(frozen=True)
class AskUser:
    question: str


@dataclass(frozen=True)
class Navigate:
    """Open a URL: a web target loads it, a desktop client types it into the browser."""

    url: str


ActionKind = (
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
)

# Kinds after which nothing else of the same batch may follow.
TERMINAL_KINDS: tuple[type, ...] = (Done, Fail, AskUser)
# Kinds that end the session instead of being sent to the client.
SESSION_ENDING_KINDS: tuple[type, ...] = (Done, Fail)


def is_terminal(kind: ActionKind) -> bool:
    return isinstance(kind, TERMINAL_KINDS)


def ends_session(kind: ActionKind) -> bool:
    return isinstance(kind, SESSION_ENDING_KINDS)


def has_coordinates(kind: ActionKind) -> bool:
    return bool(points_of(kind))


def points_of(kind: ActionKind) -> tuple[Point, ...]:
    if isinstance(kind, Click | Move | Scroll):
        return (kind.point,)
    if isinstance(kind, MouseDown | MouseUp):
        return () if kind.point is None else (kind.point,)
    if isinstance(kind, Drag):
        return kind.path
    return ()


def map_points(kind: ActionKind, fn: Callable[[Point], Point]) -> ActionKind:
    """The same action with every coordinate passed through fn (e.g. model -> frame)."""
    if isinstance(kind, Click | Move | Scroll):
        return dataclasses.replace(kind, point=fn(kind.point))
    if isinstance(kind, MouseDown | MouseUp):
        return kind if kind.point is None else dataclasses.replace(kind, point=fn(kind.point))
    if isinstance(kind, Drag):
        return dataclasses.replace(kind, path=tuple(fn(p) for p in kind.path))
    return kind


@dataclass(frozen=True)
class Action:
    action_id: str
    # The frame whose pixels the coordinates refer to; "" for actions without any.
    frame_id: str
    kind: ActionKind


@dataclass(frozen=True)
class HistoryStep:
    """One earlier model step, kept as text-sized values (no images)."""

    step: int
    actions: tuple[Action, ...]
    thought: str = ""
    note: str = ""
    results: tuple[ActionResult, ...] = field(default=())
    # Size of the frame the actions' coordinates refer to, so a dialect can show
    # them back to the model in its own coordinate space.
    frame_size: Size | None = None


def describe(kind: ActionKind, point_text: Callable[[Point], str] | None = None) -> str:
    """A compact, model-readable line for one action; points are shown by
    point_text (default: frame pixels with one decimal)."""

    def pt(p: Point) -> str:
        return point_text(p) if point_text is not None else f"({p.x:.1f}, {p.y:.1f})"

    match kind:
        case Click(point=p, button=b, count=c, modifiers=m):
            name = {1: "click", 2: "double_click", 3: "triple_click"}.get(c, "click")
            extra = "" if b is MouseButton.LEFT else f" button={b.value}"
            mods = f" holding {'+'.join(x.value for x in m)}" if m else ""
            return f"{name} at {pt(p)}{extra}{mods}"
        case Move(point=p):
            return f"move to {pt(p)}"
        case MouseDown(button=b, point=p):
            return f"mouse_down {b.value}" + ("" if p is None else f" at {pt(p)}")
        case MouseUp(button=b, point=p):
            return f"mouse_up {b.value}" + ("" if p is None else f" at {pt(p)}")
        case Drag(path=path):
            return "drag " + " -> ".join(pt(p) for p in path)
        case Scroll(point=p, dx=dx, dy=dy):
            return f"scroll dx={dx} dy={dy} at {pt(p)}"
        case TypeText(text=t):
            return f"type {t!r}"
        case KeyChord(keys=keys):
            return "press " + "+".join(keys)
        case KeyDown(key=k):
            return f"key_down {k}"
        case KeyUp(key=k):
            return f"key_up {k}"
        case Wait(duration_ms=ms):
            return f"wait {ms} ms"
        case Done(answer=a):
            return f"done: {a}"
        case Fail(reason=r):
            return f"fail: {r}"
        case AskUser(question=q):
            return f"ask_user: {q}"
        case Navigate(url=u):
            return f"goto {u}"
    raise AssertionError(f"unhandled action kind {kind!r}")  # pragma: no cover
