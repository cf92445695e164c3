"""The `nemotron-tools` family, reading: one tool call (name, arguments) -> the
contract's actions it asks for, or a DialectParseError that says what to fix.

Apart from the specs (nemotron_schema) and the history rendering (nemotron_render)
because this is the side that meets whatever the model wrote: every check and its
correction text live here, the inverse of nemotron_render's mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from holodesk.daemon.actions import (
    ActionKind,
    Click,
    Done,
    Drag,
    Fail,
    KeyChord,
    Move,
    Navigate,
    Scroll,
    TypeText,
    Wait,
)
from holodesk.daemon.dialects.base import DialectParseError
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.nemotron_schema import (
    ACTIONS,
    CLICKS,
    DIRECTIONS,
    HISTORY,
    MAX_ACTIONS,
    MAX_KEYS,
    MAX_SCROLL,
    MAX_TAB,
    NEW_TAB,
)
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.tool_dialect import CallEffect
from holodesk.daemon.dialects.values import brief, key_name, number, point_value, text
from holodesk.daemon.geometry import Point


def effect(
    name: str, arguments: Mapping[str, Any], spec: DialectSpec, geometry: ImageGeometry
) -> CallEffect:
    if name == "computer":
        raw = arguments.get("actions")
        if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_ACTIONS:
            raise DialectParseError(
                f"actions is {brief(raw)}",
                f"Give computer's actions as a list of 1 to {MAX_ACTIONS} action objects.",
            )
        return CallEffect(tuple(_computer(item, i, spec, geometry) for i, item in enumerate(raw)))
    if name == "navigate":
        url = text(arguments, "url")
        return CallEffect((HISTORY.get(url.strip().lower()) or Navigate(url.strip()),))
    if name == "tabs_create":
        url = text(arguments, "url", required=False).strip()
        return CallEffect((NEW_TAB, Navigate(url)) if url else (NEW_TAB,))
    if name == "tabs_focus":
        tab = number(arguments.get("tab_id"), "tab_id")
        if tab != round(tab) or not 1 <= tab <= MAX_TAB:
            raise DialectParseError(
                f"tab_id is {tab:g}", f"tab_id is a whole number 1 to {MAX_TAB}."
            )
        return CallEffect((KeyChord(("ctrl", str(int(tab)))),))
    if name == "terminate":
        status = arguments.get("status")
        answer = text(arguments, "answer", required=False)
        if status == "success":
            return CallEffect((Done(answer),))
        if status == "failure":
            return CallEffect((Fail(answer or "the model gave up"),))
        raise DialectParseError(f"status is {brief(status)}", "status is success or failure.")
    raise DialectParseError(f"unknown tool {brief(name)}", "Use navigate, computer, tabs_create, "
                            "tabs_focus or terminate.")  # fmt: skip


def _computer(item: Any, index: int, spec: DialectSpec, geo: ImageGeometry) -> ActionKind:
    where = f"actions[{index}]"
    if not isinstance(item, dict):
        raise DialectParseError(f"{where} is {brief(item)}", 'Each action is {"action": ...}.')
    kind = item.get("action")
    if kind in CLICKS:
        button, count = CLICKS[kind]
        return Click(_at(item, "coordinate", geo), button=button, count=count)
    if kind == "mouse_move":
        return Move(_at(item, "coordinate", geo))
    if kind == "left_click_drag":
        return Drag((_at(item, "start_coordinate", geo), _at(item, "coordinate", geo)))
    if kind == "type":
        return TypeText(text(item, "text"))
    if kind == "key_press":
        raw = item.get("keys", item.get("key"))
        keys = [raw] if isinstance(raw, str) else raw
        if not isinstance(keys, list) or not 1 <= len(keys) <= MAX_KEYS:
            raise DialectParseError(
                f"{where}.keys is {brief(raw)}", f"Give keys as a list of 1 to {MAX_KEYS} keys."
            )
        return KeyChord(tuple(key_name(k, spec.key_aliases) for k in keys))
    if kind == "scroll":
        return _scroll(item, where, geo)
    if kind == "wait":
        seconds = number(item.get("duration"), "duration")
        if not 0 <= seconds <= spec.max_wait_s:
            raise DialectParseError(
                f"duration is {seconds:g} s", f"Wait 0 to {spec.max_wait_s:g} seconds."
            )
        return Wait(round(seconds * 1000))
    raise DialectParseError(
        f"{where}.action is {brief(kind)}", "Use one of: " + ", ".join(ACTIONS) + "."
    )


def _at(item: Mapping[str, Any], name: str, geo: ImageGeometry) -> Point:
    if item.get(name) is None:
        raise DialectParseError(f"the action has no {name}", f"Give {name} as [x, y] in 0-1.")
    return point_value(item[name], geo, name)


def _scroll(item: Mapping[str, Any], where: str, geo: ImageGeometry) -> ActionKind:
    params = item.get("scroll_parameters")
    if not isinstance(params, dict):
        raise DialectParseError(
            f"{where}.scroll_parameters is {brief(params)}",
            "Give scroll_parameters as {scroll_direction, scroll_amount}.",
        )
    direction = params.get("scroll_direction")
    if direction not in DIRECTIONS:
        raise DialectParseError(
            f"scroll_direction is {brief(direction)}", "Scroll up, down, left or right."
        )
    amount = number(params.get("scroll_amount", 3), "scroll_amount")
    if amount != round(amount) or not 1 <= amount <= MAX_SCROLL:
        raise DialectParseError(
            f"scroll_amount is {amount:g}", f"scroll_amount is a whole number 1 to {MAX_SCROLL}."
        )
    dx, dy = DIRECTIONS[direction]
    notches = int(amount)
    return Scroll(_at(item, "coordinate", geo), dx=dx * notches, dy=dy * notches)
