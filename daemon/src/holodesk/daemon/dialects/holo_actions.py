"""Holo action objects -> contract actions (frame pixels).

One function per canonical action name; the dialect's alias table maps the
many names models use onto these. Each reads its fields with the typed readers
of `values`, so any malformed field is a DialectParseError with a hint.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

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
    Modifier,
    MouseButton,
    MouseDown,
    MouseUp,
    Move,
    Navigate,
    Scroll,
    TypeText,
    Wait,
)
from holodesk.daemon.dialects.base import DialectParseError
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.holo_space import MAX_DRAG_MS, MAX_PATH_POINTS, MAX_SCROLL_NOTCHES
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.values import (
    brief,
    key_list,
    key_name,
    number,
    optional_point,
    point_value,
    required_point,
    text,
)
from holodesk.daemon.geometry import Point

Obj = Mapping[str, Any]
Handler = Callable[[Obj, DialectSpec, ImageGeometry], list[ActionKind]]


def _button(obj: Obj, default: MouseButton = MouseButton.LEFT) -> MouseButton:
    raw = obj.get("button")
    if raw is None:
        return default
    if isinstance(raw, str):
        try:
            return MouseButton(raw.strip().lower())
        except ValueError:
            pass
    raise DialectParseError(
        f"button is {brief(raw)}", "Use button left, right, middle, back or forward."
    )


def _modifiers(obj: Obj, spec: DialectSpec) -> tuple[Modifier, ...]:
    raw = obj.get("modifiers", obj.get("hold_keys"))
    if raw is None or raw == []:
        return ()
    keys = key_list(raw, spec.key_aliases)
    try:
        return tuple(Modifier(k) for k in keys)
    except ValueError:
        raise DialectParseError(
            f"modifiers {brief(raw)} are not all modifier keys",
            "Modifiers are ctrl, shift, alt and meta.",
        ) from None


def _count(obj: Obj, default: int) -> int:
    raw = obj.get("count", obj.get("clicks"))
    if raw is None:
        return default
    value = number(raw, "count")
    if value not in (1.0, 2.0, 3.0):
        raise DialectParseError(f"count is {value:g}", "count is 1, 2 or 3.")
    return int(value)


def _clicker(count: int, button: MouseButton) -> Handler:
    def handle(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
        return [
            Click(
                point=required_point(obj, geo),
                button=_button(obj, button),
                count=_count(obj, count),
                modifiers=_modifiers(obj, spec),
            )
        ]

    return handle


def _move(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [Move(required_point(obj, geo))]


def _mouse_down(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [MouseDown(_button(obj), optional_point(obj, geo))]


def _mouse_up(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [MouseUp(_button(obj), optional_point(obj, geo))]


def _drag(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    path: list[Point]
    raw_path = obj.get("path")
    if raw_path is not None:
        if not isinstance(raw_path, list) or not 2 <= len(raw_path) <= MAX_PATH_POINTS:
            raise DialectParseError(
                f"path is {brief(raw_path)}",
                f"Give path as a list of 2 to {MAX_PATH_POINTS} [x, y] points.",
            )
        path = [point_value(p, geo, f"path[{i}]") for i, p in enumerate(raw_path)]
    else:
        start = obj.get("from", obj.get("start", obj.get("start_point")))
        end = obj.get("to", obj.get("end", obj.get("end_point")))
        if start is None or end is None:
            raise DialectParseError(
                "drag needs a path or from/to points", 'Give "from": [x, y] and "to": [x, y].'
            )
        path = [point_value(start, geo, "from"), point_value(end, geo, "to")]
    return [
        Drag(
            path=tuple(path),
            button=_button(obj),
            modifiers=_modifiers(obj, spec),
            duration_ms=_duration_ms(obj),
        )
    ]


def _duration_ms(obj: Obj) -> int:
    raw = obj.get("duration_ms")
    if raw is None:
        return 0
    value = number(raw, "duration_ms")
    if not 0 <= value <= MAX_DRAG_MS:
        raise DialectParseError(
            f"duration_ms is {value:g}", f"duration_ms is 0 to {MAX_DRAG_MS} milliseconds."
        )
    return round(value)


def _write(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    content = text(obj, "content", "text", "value")
    if not content:
        raise DialectParseError("write has no content", "Put the text to type in content.")
    point = optional_point(obj, geo)
    out: list[ActionKind] = [] if point is None else [Click(point)]
    out.append(TypeText(content))
    if spec.write_presses_enter:
        out.append(KeyChord(("enter",)))
    return out


_SCROLL = {"down": (0, 1), "up": (0, -1), "right": (1, 0), "left": (-1, 0)}


def _scroll(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    raw = obj.get("direction", "down")
    direction = raw.strip().lower() if isinstance(raw, str) else None
    if direction not in _SCROLL:
        raise DialectParseError(f"direction is {brief(raw)}", "Scroll up, down, left or right.")
    amount_raw = obj.get("amount", obj.get("notches"))
    amount = spec.scroll_notches
    if amount_raw is not None:
        value = number(amount_raw, "amount")
        if not 1 <= value <= MAX_SCROLL_NOTCHES:
            raise DialectParseError(
                f"amount is {value:g}", f"amount is 1 to {MAX_SCROLL_NOTCHES} notches."
            )
        amount = round(value)
    point = optional_point(obj, geo)
    if point is None:
        point = Point(geo.frame.width / 2, geo.frame.height / 2)
    dx, dy = _SCROLL[direction]
    return [Scroll(point=point, dx=dx * amount, dy=dy * amount)]


def _hotkey(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    for name in ("keys", "key", "hotkey", "combination"):
        if name in obj:
            return [KeyChord(key_list(obj[name], spec.key_aliases))]
    raise DialectParseError("hotkey has no keys", 'Give keys, e.g. "keys": ["ctrl", "c"].')


def _key_down(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [KeyDown(key_name(obj.get("key"), spec.key_aliases))]


def _key_up(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [KeyUp(key_name(obj.get("key"), spec.key_aliases))]


def _wait(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    raw = obj.get("seconds", obj.get("duration"))
    seconds = spec.default_wait_s if raw is None else number(raw, "seconds")
    if seconds < 0:
        raise DialectParseError(f"seconds is {seconds:g}", "Wait a positive number of seconds.")
    return [Wait(round(min(seconds, spec.max_wait_s) * 1000))]


def _answer(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [Done(text(obj, "content", "answer", "text", required=False))]


def _fail(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [Fail(text(obj, "reason", "content", "text", required=False) or "the model gave up")]


def _ask_user(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [AskUser(text(obj, "question", "content", "text"))]


# Browser verbs of the web-agent formats, as the keystrokes a desktop browser takes.
def _go_back(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [KeyChord(("alt", "left"))]


def _refresh(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [KeyChord(("f5",))]


def _goto(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    url = text(obj, "url", "content").strip()
    if not url:
        raise DialectParseError("goto has no url", 'Give the address, e.g. "url": "example.org".')
    # The client loads it directly (web target) or types it into the address bar.
    return [Navigate(url)]


HANDLERS: dict[str, Handler] = {
    "click": _clicker(1, MouseButton.LEFT),
    "double_click": _clicker(2, MouseButton.LEFT),
    "triple_click": _clicker(3, MouseButton.LEFT),
    "right_click": _clicker(1, MouseButton.RIGHT),
    "middle_click": _clicker(1, MouseButton.MIDDLE),
    "move": _move,
    "mouse_down": _mouse_down,
    "mouse_up": _mouse_up,
    "drag": _drag,
    "write": _write,
    "scroll": _scroll,
    "hotkey": _hotkey,
    "key_down": _key_down,
    "key_up": _key_up,
    "wait": _wait,
    "answer": _answer,
    "fail": _fail,
    "ask_user": _ask_user,
    "go_back": _go_back,
    "refresh": _refresh,
    "goto": _goto,
}
