"""ComputerService's own messages: an `Action` a caller sends, and DesktopInfo.

The daemon's convert/ package only ever sends actions (a policy decides them);
here actions arrive from outside, so this is the one place that reads an `Action`
message into an action kind, refusing what is malformed with INVALID_ARGUMENT
naming the field. The pieces these messages share with RunSession (frames,
results, a session's client and displays) convert in convert/, once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from holodesk.daemon import actions as act
from holodesk.daemon import convert
from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.frames import EncodedFrame
from holodesk.daemon.geometry import Point
from holodesk.daemon.session.sessions import Session
from holodesk.proto.v1 import action_pb2, computer_pb2, geometry_pb2

_BUTTONS = {
    action_pb2.MOUSE_BUTTON_UNSPECIFIED: act.MouseButton.LEFT,
    action_pb2.MOUSE_BUTTON_LEFT: act.MouseButton.LEFT,
    action_pb2.MOUSE_BUTTON_RIGHT: act.MouseButton.RIGHT,
    action_pb2.MOUSE_BUTTON_MIDDLE: act.MouseButton.MIDDLE,
    action_pb2.MOUSE_BUTTON_BACK: act.MouseButton.BACK,
    action_pb2.MOUSE_BUTTON_FORWARD: act.MouseButton.FORWARD,
}
_MODIFIERS = {
    action_pb2.MODIFIER_CTRL: act.Modifier.CTRL,
    action_pb2.MODIFIER_SHIFT: act.Modifier.SHIFT,
    action_pb2.MODIFIER_ALT: act.Modifier.ALT,
    action_pb2.MODIFIER_META: act.Modifier.META,
}
# Kinds a caller may not send: they end or suspend a model's session, not a desktop's.
NOT_DESKTOP_ACTIONS = ("done", "fail", "ask_user")


def _point(point: geometry_pb2.Point, field: str) -> Point:
    if not (math.isfinite(point.x) and math.isfinite(point.y)):
        raise InvalidArgument(field, "coordinates must be finite numbers")
    return Point(point.x, point.y)


def _required_point(owner: Any, field: str) -> Point:
    """The `point` field of a click, move or scroll: never defaulted to (0, 0)."""
    if not owner.HasField("point"):
        raise InvalidArgument(f"{field}.point", "required")
    return _point(owner.point, f"{field}.point")


def _button(value: int, field: str) -> act.MouseButton:
    button = _BUTTONS.get(action_pb2.MouseButton.ValueType(value))
    if button is None:
        raise InvalidArgument(field, f"unknown mouse button {value}")
    return button


def _modifiers(values: Iterable[int], field: str) -> tuple[act.Modifier, ...]:
    out = []
    for index, value in enumerate(values):
        modifier = _MODIFIERS.get(action_pb2.Modifier.ValueType(value))
        if modifier is None:
            raise InvalidArgument(f"{field}[{index}]", f"unknown modifier {value}")
        out.append(modifier)
    return tuple(out)


def action_kind_from_pb(action: action_pb2.Action, field: str) -> act.ActionKind:
    """The action's kind, checked; coordinates stay in the pixels of action.frame_id."""
    kind = action.WhichOneof("kind")
    where = f"{field}.{kind}"
    match kind:
        case None:
            raise InvalidArgument(field, "no action kind set")
        case "click":
            count = action.click.count or 1
            if count > 3:
                raise InvalidArgument(f"{where}.count", f"must be 1, 2 or 3, got {count}")
            return act.Click(
                _required_point(action.click, where),
                _button(action.click.button, f"{where}.button"),
                count,
                _modifiers(action.click.modifiers, f"{where}.modifiers"),
            )
        case "move":
            return act.Move(_required_point(action.move, where))
        case "mouse_down" | "mouse_up":
            inner = getattr(action, kind)
            point = _point(inner.point, f"{where}.point") if inner.HasField("point") else None
            cls = act.MouseDown if kind == "mouse_down" else act.MouseUp
            return cls(_button(inner.button, f"{where}.button"), point)
        case "drag":
            if len(action.drag.path) < 2:
                raise InvalidArgument(f"{where}.path", "needs at least two points")
            return act.Drag(
                tuple(_point(p, f"{where}.path[{i}]") for i, p in enumerate(action.drag.path)),
                _button(action.drag.button, f"{where}.button"),
                _modifiers(action.drag.modifiers, f"{where}.modifiers"),
                action.drag.duration_ms,
            )
        case "scroll":
            scroll = action.scroll
            return act.Scroll(_required_point(scroll, where), scroll.dx, scroll.dy)
        case "type_text":
            return act.TypeText(action.type_text.text)
        case "key_chord":
            if not action.key_chord.keys:
                raise InvalidArgument(f"{where}.keys", "needs at least one key")
            return act.KeyChord(tuple(action.key_chord.keys))
        case "key_down":
            return act.KeyDown(action.key_down.key)
        case "key_up":
            return act.KeyUp(action.key_up.key)
        case "wait":
            return act.Wait(action.wait.duration_ms)
        case "navigate":
            return act.Navigate(action.navigate.url)
        case _:
            raise InvalidArgument(
                where,
                f"{kind} is not a desktop action ({', '.join(NOT_DESKTOP_ACTIONS)} end or "
                "suspend a model's session; a desktop stays attached until its client leaves)",
            )


def desktop_info_to_pb(
    desktop_id: str, session: Session, frame: EncodedFrame | None
) -> computer_pb2.DesktopInfo:
    info = computer_pb2.DesktopInfo(
        desktop_id=desktop_id,
        owner=session.principal,
        client=convert.client_info_to_pb(session.request.client),
        displays=[convert.display_to_pb(d) for d in session.request.displays],
        session_id=session.session_id,
        attached=session.attached,
    )
    if frame is not None:
        info.frame_id = frame.frame_id
        info.frame_size.CopyFrom(
            geometry_pb2.Size(width=frame.size.width, height=frame.size.height)
        )
    return info
