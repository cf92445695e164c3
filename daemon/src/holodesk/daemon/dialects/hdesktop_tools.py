"""`hdesktop` tool calls -> contract actions (frame pixels).

One function per tool of H Company's desktop format. Each reads its fields with
the typed readers of `values`, so a malformed field is a DialectParseError with a
hint, never another exception. A tool returns the actions it stands for and, for
update_plan, the goals it sets (the step then has no action; see hdesktop_plan).

Why drag_to_desktop presses where the pointer *is* (MouseDown without a point)
rather than at a position the dialect remembers: "from the current cursor" means
the real pointer, and only the client knows it for sure. A position replayed from
the history would be wrong after an action that failed or was skipped, after the
person at the desk moved the mouse, after a resume on another client, and unknown
on the first step; a parser shared by every session has no history to read anyway.
The contract's MouseDown without a point presses at the pointer, and MouseUp with
one moves there with the button held and releases: the harness's own
mouseDown / moveTo / mouseUp.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from holodesk.daemon.actions import (
    ActionKind,
    Click,
    Done,
    KeyChord,
    KeyDown,
    KeyUp,
    MouseButton,
    MouseDown,
    MouseUp,
    Move,
    Scroll,
    TypeText,
)
from holodesk.daemon.dialects import hdesktop_schema as schema
from holodesk.daemon.dialects.base import DialectParseError
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.hdesktop_plan import Goal
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.values import brief, key_name, model_point, number, text
from holodesk.daemon.geometry import Point

Obj = Mapping[str, Any]

# write_desktop's overwrite: select everything in the field, then delete it.
SELECT_ALL = KeyChord(("ctrl", "a"))
DELETE = KeyChord(("delete",))
ENTER = KeyChord(("enter",))


@dataclass(frozen=True)
class ToolEffect:
    """What one tool call does: desktop actions, and the plan when it sets one."""

    actions: tuple[ActionKind, ...]
    plan: tuple[Goal, ...] | None = None


Handler = Callable[[Obj, DialectSpec, ImageGeometry], ToolEffect]


def _point(obj: Obj, geo: ImageGeometry) -> Point:
    if obj.get("x") is None or obj.get("y") is None:
        raise DialectParseError(
            "the tool needs x and y", "Give the target as x and y in [0, 1000]."
        )
    return model_point(obj["x"], obj["y"], geo)


def _flag(obj: Obj, name: str) -> bool:
    raw = obj.get(name, False)
    if raw is None:
        return False
    if not isinstance(raw, bool):
        raise DialectParseError(f"{name} is {brief(raw)}", f"Give {name} as true or false.")
    return raw


def _whole(obj: Obj, name: str, default: int, most: int) -> int:
    raw = obj.get(name)
    if raw is None:
        return default
    value = number(raw, name)
    if value != round(value) or not 1 <= value <= most:
        raise DialectParseError(f"{name} is {value:g}", f"{name} is a whole number 1 to {most}.")
    return int(value)


def _keys(obj: Obj, name: str, most: int, spec: DialectSpec) -> tuple[str, ...]:
    raw = obj.get(name)
    if isinstance(raw, str):  # one key given bare
        raw = [raw]
    if not isinstance(raw, list) or not 1 <= len(raw) <= most:
        raise DialectParseError(
            f"{name} is {brief(raw)}", f'Give {name} as a list of 1 to {most} keys, e.g. ["ctrl"].'
        )
    return tuple(key_name(k, spec.key_aliases) for k in raw)


def _button(obj: Obj) -> MouseButton:
    raw = obj.get("button", "left")
    if raw is None:
        return MouseButton.LEFT
    if isinstance(raw, str) and raw.strip().lower() in schema.BUTTONS:
        return MouseButton(raw.strip().lower())
    raise DialectParseError(f"button is {brief(raw)}", "Use button left, right or middle.")


def _update_plan(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    raw = obj.get("goals")
    if not isinstance(raw, list) or not 1 <= len(raw) <= schema.MAX_GOALS:
        raise DialectParseError(
            f"goals is {brief(raw)}",
            f"Give goals as a list of 1 to {schema.MAX_GOALS} {{title, status}} objects.",
        )
    goals: list[Goal] = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise DialectParseError(f"goals[{index}] is {brief(item)}", "Each goal is an object.")
        status = item.get("status", "todo")
        if status not in schema.GOAL_STATUSES:
            raise DialectParseError(
                f"goals[{index}].status is {brief(status)}",
                "A goal's status is todo, running, done or failed.",
            )
        goals.append(Goal(text(item, "title"), status))
    return ToolEffect((), tuple(goals))


def _write(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    content = text(obj, "content")
    actions: list[ActionKind] = [SELECT_ALL, DELETE] if _flag(obj, "overwrite") else []
    if content:
        actions.append(TypeText(content))
    if _flag(obj, "press_enter"):
        actions.append(ENTER)
    return ToolEffect(tuple(actions))


def _click(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    return ToolEffect((Click(_point(obj, geo), button=_button(obj)),))


def _double_click(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    return ToolEffect((Click(_point(obj, geo), count=2),))


def _move(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    return ToolEffect((Move(_point(obj, geo)),))


def _drag(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    # From the pointer as it is (see the module docstring), to (x, y).
    return ToolEffect((MouseDown(MouseButton.LEFT), MouseUp(MouseButton.LEFT, _point(obj, geo))))


_DIRECTIONS = {"down": (0, 1), "up": (0, -1), "right": (1, 0), "left": (-1, 0)}


def _scroll(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    raw = obj.get("direction")
    direction = raw.strip().lower() if isinstance(raw, str) else None
    if direction not in _DIRECTIONS:
        raise DialectParseError(f"direction is {brief(raw)}", "Scroll up, down, left or right.")
    size = _whole(obj, "scroll_size", schema.DEFAULT_SCROLL, schema.MAX_SCROLL)
    dx, dy = _DIRECTIONS[direction]
    return ToolEffect((Scroll(_point(obj, geo), dx=dx * size, dy=dy * size),))


def _key_down(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    return ToolEffect((KeyDown(key_name(obj.get("key"), spec.key_aliases)),))


def _key_up(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    return ToolEffect((KeyUp(key_name(obj.get("key"), spec.key_aliases)),))


def _hotkey(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    keys = _keys(obj, "keys", schema.MAX_HOTKEY_KEYS, spec)
    repeat = _whole(obj, "repeat_count", 1, schema.MAX_REPEAT)
    return ToolEffect(tuple(KeyChord(keys) for _ in range(repeat)))


def _hold_and_tap(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    hold = _keys(obj, "hold_keys", schema.MAX_HOLD_KEYS, spec)
    tap = _keys(obj, "tap_keys", schema.MAX_TAP_KEYS, spec)
    return ToolEffect(
        (
            *(KeyDown(k) for k in hold),
            *(KeyChord((k,)) for k in tap),
            *(KeyUp(k) for k in reversed(hold)),
        )
    )


def _answer(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    return ToolEffect((Done(text(obj, "content", required=False)),))


HANDLERS: dict[str, Handler] = {
    "update_plan": _update_plan,
    "write_desktop": _write,
    "click_desktop": _click,
    "double_click_desktop": _double_click,
    "move_to_desktop": _move,
    "drag_to_desktop": _drag,
    "scroll_desktop": _scroll,
    "key_down_desktop": _key_down,
    "key_up_desktop": _key_up,
    "hotkey_desktop": _hotkey,
    "hold_and_tap_key_desktop": _hold_and_tap,
    "answer": _answer,
}


def tool_effect(raw: Any, spec: DialectSpec, geometry: ImageGeometry) -> ToolEffect:
    """What the tool call does; DialectParseError for anything unusable."""
    if not isinstance(raw, dict):
        raise DialectParseError(
            f"tool_call is {brief(raw)}, not an object",
            'Give tool_call as {"tool_name": <name>, ...its arguments}.',
        )
    name = raw.get("tool_name")
    handler = HANDLERS.get(name) if isinstance(name, str) else None
    if handler is None:
        raise DialectParseError(
            f"unknown tool_name {brief(name)}", "Use one of: " + ", ".join(schema.TOOL_NAMES) + "."
        )
    return handler(raw, spec, geometry)
