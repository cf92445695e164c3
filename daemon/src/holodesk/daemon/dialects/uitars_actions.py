"""UI-TARS calls -> contract actions (frame pixels), and back for the history.

One handler per canonical action name; the dialect's alias table maps other
names (left_single, select, move_to, release, ...) onto these. Coordinates come
as boxes in any of the forms UI-TARS writes: '(x,y)', '(x1,y1,x2,y2)',
'[x1,y1,x2,y2]', '<|box_start|>(x,y)<|box_end|>', '<point>x y</point>',
'<bbox>x1 y1 x2 y2</bbox>'; a box means its centre.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from holodesk.daemon.actions import (
    ActionKind,
    AskUser,
    Click,
    Done,
    Drag,
    Fail,
    KeyChord,
    KeyDown,
    KeyUp,
    MouseButton,
    MouseDown,
    MouseUp,
    Move,
    Scroll,
    TypeText,
    Wait,
)
from holodesk.daemon.dialects.base import DialectParseError, LocatedTarget
from holodesk.daemon.dialects.coords import CoordinateConvention, ImageGeometry
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.uitars_calls import Call
from holodesk.daemon.dialects.values import (
    brief,
    key_list,
    key_name,
    model_box,
    model_point,
    number,
)
from holodesk.daemon.geometry import Point

_BOX_HINT = "Give positions as start_box='(x,y)'."
_BOX_TOKENS = re.compile(r"<\|box_start\|>|<\|box_end\|>|</?point>|</?bbox>")
_BOX_SPLIT = re.compile(r"[\s,()\[\]]+")
_MAX_BOX_CHARS = 200
_POSITION_ARGS = ("start_box", "point", "start_point", "box")
# Numbers as float() reads them, nan and inf included (rejected later, with their name).
_NUMBER = re.compile(
    r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?|nan|inf(?:inity)?)", re.I
)


@dataclass(frozen=True)
class Context:
    spec: DialectSpec
    geometry: ImageGeometry
    # The step's thought: call_user() takes no question, the thought says what is needed.
    thought: str


Handler = Callable[[Call, Context], list[ActionKind]]


def box_target(raw: str, geometry: ImageGeometry, name: str = "start_box") -> LocatedTarget:
    """A point, or a box and its centre, in frame pixels; every corner must be in the
    image and a box's corners in order (top-left first)."""
    if len(raw) > _MAX_BOX_CHARS:
        raise DialectParseError(f"{name} is {brief(raw)}, not a position", _BOX_HINT)
    parts = [p for p in _BOX_SPLIT.split(_BOX_TOKENS.sub(" ", raw)) if p]
    if len(parts) not in (2, 4) or not all(_NUMBER.fullmatch(p) for p in parts):
        raise DialectParseError(f"{name} is {brief(raw)}, not a point or a box", _BOX_HINT)
    values = [number(p, name) for p in parts]
    if len(values) == 2:
        return LocatedTarget(model_point(values[0], values[1], geometry))
    box = model_box(values, geometry, name)
    return LocatedTarget(box.center, box)


def box_point(raw: str, geometry: ImageGeometry, name: str = "start_box") -> Point:
    """A point or a box's centre, in frame pixels."""
    return box_target(raw, geometry, name).point


def position_arg(call: Call) -> str | None:
    """The call's raw position (start_box and its spellings), if it has one."""
    return call.arg(*_POSITION_ARGS, position=0)


def _point(call: Call, ctx: Context, *, required: bool = True) -> Point | None:
    raw = position_arg(call)
    if raw is None:
        if required:
            raise DialectParseError(f"{call.name}() needs a position", _BOX_HINT)
        return None
    return box_point(raw, ctx.geometry)


def _required_point(call: Call, ctx: Context) -> Point:
    point = _point(call, ctx)
    assert point is not None  # required=True raises instead
    return point


# UI-TARS's action space names these three only (no side buttons), so its history
# renderer never has to invent syntax for back/forward.
_BUTTONS = {b.value: b for b in (MouseButton.LEFT, MouseButton.RIGHT, MouseButton.MIDDLE)}


def _button(call: Call, default: MouseButton = MouseButton.LEFT) -> MouseButton:
    raw = call.arg("button")
    if raw is None:
        return default
    button = _BUTTONS.get(raw.strip().lower())
    if button is None:
        raise DialectParseError(
            f"button is {brief(raw)}", "Use button='left', 'right' or 'middle'."
        )
    return button


def _clicker(count: int, button: MouseButton) -> Handler:
    def handle(call: Call, ctx: Context) -> list[ActionKind]:
        return [Click(_required_point(call, ctx), button=_button(call, button), count=count)]

    return handle


def _hover(call: Call, ctx: Context) -> list[ActionKind]:
    return [Move(_required_point(call, ctx))]


def _mouse_down(call: Call, ctx: Context) -> list[ActionKind]:
    return [MouseDown(_button(call), _point(call, ctx, required=False))]


def _mouse_up(call: Call, ctx: Context) -> list[ActionKind]:
    return [MouseUp(_button(call), _point(call, ctx, required=False))]


def _drag(call: Call, ctx: Context) -> list[ActionKind]:
    start = call.arg("start_box", "start_point", position=0)
    end = call.arg("end_box", "end_point", position=1)
    if start is None or end is None:
        raise DialectParseError(
            f"{call.name}() needs start_box and end_box",
            "Write drag(start_box='(x1,y1)', end_box='(x2,y2)').",
        )
    path = (box_point(start, ctx.geometry), box_point(end, ctx.geometry, "end_box"))
    return [Drag(path=path)]


def _keys_arg(call: Call) -> str:
    raw = call.arg("key", "hotkey", "keys", "press", position=0)
    if raw is None:
        raise DialectParseError(f"{call.name}() has no key", "Write hotkey(key='ctrl c').")
    return raw


def _hotkey(call: Call, ctx: Context) -> list[ActionKind]:
    # "ctrl c": UI-TARS separates keys with spaces (key_list also takes "ctrl+c").
    return [KeyChord(key_list(_keys_arg(call), ctx.spec.key_aliases))]


def _key_down(call: Call, ctx: Context) -> list[ActionKind]:
    return [KeyDown(key_name(_keys_arg(call).strip() or " ", ctx.spec.key_aliases))]


def _key_up(call: Call, ctx: Context) -> list[ActionKind]:
    return [KeyUp(key_name(_keys_arg(call).strip() or " ", ctx.spec.key_aliases))]


def _type(call: Call, ctx: Context) -> list[ActionKind]:
    content = call.arg("content", "text", position=0)
    if content is None or content == "":
        raise DialectParseError(
            "type() has no content", "Write type(content='...'); end it with \\n to submit."
        )
    # A trailing \n means "then press Enter", as in the reference agent.
    text = content.rstrip("\n")
    out: list[ActionKind] = [TypeText(text)] if text else []
    if text != content:
        out.append(KeyChord(("enter",)))
    return out


_SCROLL = {"down": (0, 1), "up": (0, -1), "right": (1, 0), "left": (-1, 0)}


def _scroll(call: Call, ctx: Context) -> list[ActionKind]:
    raw = call.arg("direction", position=1) or "down"
    direction = raw.strip().lower()
    if direction not in _SCROLL:
        raise DialectParseError(
            f"direction is {brief(raw)}", "Write direction='down', 'up', 'left' or 'right'."
        )
    point = _point(call, ctx, required=False)
    if point is None:
        point = Point(ctx.geometry.frame.width / 2, ctx.geometry.frame.height / 2)
    dx, dy = _SCROLL[direction]
    notches = ctx.spec.scroll_notches
    return [Scroll(point=point, dx=dx * notches, dy=dy * notches)]


def _wait(call: Call, ctx: Context) -> list[ActionKind]:
    raw = call.arg("seconds", "time", position=0)
    seconds = ctx.spec.default_wait_s if raw is None else number(raw, "seconds")
    if seconds < 0:
        raise DialectParseError(f"seconds is {seconds:g}", "Write wait().")
    return [Wait(round(min(seconds, ctx.spec.max_wait_s) * 1000))]


def _finished(call: Call, ctx: Context) -> list[ActionKind]:
    return [Done(call.arg("content", "answer", position=0) or "")]


def _call_user(call: Call, ctx: Context) -> list[ActionKind]:
    question = call.arg("content", "question", position=0) or ctx.thought
    return [AskUser(question or "The agent needs your help to continue.")]


def _fail(call: Call, ctx: Context) -> list[ActionKind]:
    return [Fail(call.arg("reason", "content", position=0) or ctx.thought or "the model gave up")]


HANDLERS: dict[str, Handler] = {
    "click": _clicker(1, MouseButton.LEFT),
    "left_double": _clicker(2, MouseButton.LEFT),
    "left_triple": _clicker(3, MouseButton.LEFT),
    "right_single": _clicker(1, MouseButton.RIGHT),
    "middle_single": _clicker(1, MouseButton.MIDDLE),
    "hover": _hover,
    "mouse_down": _mouse_down,
    "mouse_up": _mouse_up,
    "drag": _drag,
    "hotkey": _hotkey,
    "press": _hotkey,
    "keydown": _key_down,
    "keyup": _key_up,
    "type": _type,
    "scroll": _scroll,
    "wait": _wait,
    "finished": _finished,
    "call_user": _call_user,
    "fail": _fail,
}

UITARS_ACTION_ALIASES: dict[str, str] = {
    "left_single": "click",
    "left_click": "click",
    "double_click": "left_double",
    "triple_click": "left_triple",
    "right_click": "right_single",
    "middle_click": "middle_single",
    "select": "drag",
    "left_drag": "drag",
    "move_to": "hover",
    "mouse_move": "hover",
    "move": "hover",
    "key_down": "keydown",
    "key_up": "keyup",
    "release": "keyup",
    "key": "hotkey",
    "write": "type",
    "finish": "finished",
    "done": "finished",
    "answer": "finished",
    "user_resp": "call_user",
    "ask_user": "call_user",
}


# History: contract actions back into UI-TARS calls ------------------------------------

PointText = Callable[[Point], str]


def point_text(geometry: ImageGeometry | None) -> PointText:
    """'<|box_start|>(x,y)<|box_end|>' in the model's own coordinates, as it writes them."""
    unit = geometry is not None and geometry.convention is CoordinateConvention.UNIT

    def show(point: Point) -> str:
        model = point if geometry is None else geometry.to_model(point)
        x, y = (
            (f"{model.x:.3f}", f"{model.y:.3f}")
            if unit
            else (str(round(model.x)), str(round(model.y)))
        )
        return f"<|box_start|>({x},{y})<|box_end|>"

    return show


def quote(text: str) -> str:
    """A value as UI-TARS writes it: single quotes, \\\\ \\' and \\n escaped."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return f"'{escaped}'"


def render(actions: Sequence[ActionKind], show: PointText) -> str:
    calls: list[str] = []
    index = 0
    while index < len(actions):
        action = actions[index]
        following = actions[index + 1] if index + 1 < len(actions) else None
        if isinstance(action, TypeText) and following == KeyChord(("enter",)):
            calls.append(f"type(content={quote(action.text + chr(10))})")
            index += 2
            continue
        calls.append(_render_one(action, show))
        index += 1
    return "\n\n".join(calls)


def _render_one(action: ActionKind, show: PointText) -> str:
    match action:
        case Click(point=p, button=b, count=c):
            name = {
                (MouseButton.LEFT, 2): "left_double",
                (MouseButton.LEFT, 3): "left_triple",
                (MouseButton.RIGHT, 1): "right_single",
                (MouseButton.MIDDLE, 1): "middle_single",
            }.get((b, c), "click")
            return f"{name}(start_box='{show(p)}')"
        case Move(point=p):
            return f"hover(start_box='{show(p)}')"
        case MouseDown(button=b, point=p) | MouseUp(button=b, point=p):
            name = "mouse_down" if isinstance(action, MouseDown) else "mouse_up"
            where = "" if p is None else f"start_box='{show(p)}', "
            return f"{name}({where}button='{b.value}')"
        case Drag(path=path):
            return f"drag(start_box='{show(path[0])}', end_box='{show(path[-1])}')"
        case Scroll(point=p, dx=dx, dy=dy):
            direction = (
                ("down" if dy > 0 else "up") if dy or not dx else ("right" if dx > 0 else "left")
            )
            return f"scroll(start_box='{show(p)}', direction='{direction}')"
        case TypeText(text=t):
            return f"type(content={quote(t)})"
        case KeyChord(keys=keys):
            return f"hotkey(key={quote(' '.join(keys))})"
        case KeyDown(key=k):
            return f"keydown(key={quote(k)})"
        case KeyUp(key=k):
            return f"keyup(key={quote(k)})"
        case Wait():
            return "wait()"
        case Done(answer=a):
            return f"finished(content={quote(a)})"
        case AskUser():
            return "call_user()"
        case Fail(reason=r):
            return f"finished(content={quote(r)})"
    raise AssertionError(f"unhandled action kind {action!r}")  # pragma: no cover
