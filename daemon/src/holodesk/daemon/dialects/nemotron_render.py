"""The `nemotron-tools` family, rendering history: the actions of an earlier step ->
the one call that asks for them (coordinates back in 0-1 of the screenshot), so the
conversation replays each step in the model's own words.

Apart from the reading (nemotron_calls) because it runs the other way and must stay
total: an action the tools cannot say gives None (the prompt then falls back to
text), never an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from holodesk.daemon.actions import (
    ActionKind,
    Click,
    Done,
    Drag,
    Fail,
    KeyChord,
    MouseButton,
    Move,
    Navigate,
    Scroll,
    TypeText,
    Wait,
)
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.nemotron_schema import (
    CLICKS,
    HISTORY,
    MAX_ACTIONS,
    MAX_KEYS,
    MAX_SCROLL,
)
from holodesk.daemon.dialects.tool_prompt import RenderedCall
from holodesk.daemon.geometry import Point


def call_of(
    actions: Sequence[ActionKind], note: str, geometry: ImageGeometry | None
) -> RenderedCall | None:
    acts = tuple(actions)
    match acts:
        case (Done(answer=a),):
            return RenderedCall("terminate", {"status": "success", "answer": a})
        case (Fail(reason=r),):
            return RenderedCall("terminate", {"status": "failure", "answer": r})
        case (Navigate(url=u),):
            return RenderedCall("navigate", {"url": u})
        case (KeyChord(keys=("ctrl", "t")), Navigate(url=u)):
            return RenderedCall("tabs_create", {"url": u})
        case (KeyChord(keys=("ctrl", "t")),):
            return RenderedCall("tabs_create", {"url": ""})
    if acts in ((HISTORY["back"],), (HISTORY["forward"],)):
        return RenderedCall(
            "navigate", {"url": "back" if acts[0] == HISTORY["back"] else "forward"}
        )
    items = [_item(a, geometry) for a in acts]
    if not items or len(items) > MAX_ACTIONS or any(i is None for i in items):
        return None
    return RenderedCall("computer", {"actions": items})


def _xy(point: Point, geometry: ImageGeometry | None) -> list[float]:
    if geometry is None:  # no frame size known: frame pixels, said as they are
        return [round(point.x, 1), round(point.y, 1)]
    model = geometry.to_model(point)
    return [round(model.x, 4), round(model.y, 4)]


def _item(action: ActionKind, geo: ImageGeometry | None) -> dict[str, Any] | None:
    match action:
        case Click(point=p, button=b, count=c, modifiers=()):
            name = next((n for n, bc in CLICKS.items() if bc == (b, c)), None)
            return None if name is None else {"action": name, "coordinate": _xy(p, geo)}
        case Move(point=p):
            return {"action": "mouse_move", "coordinate": _xy(p, geo)}
        case Drag(path=(start, end), button=MouseButton.LEFT, modifiers=(), duration_ms=0):
            return {
                "action": "left_click_drag",
                "start_coordinate": _xy(start, geo),
                "coordinate": _xy(end, geo),
            }
        case TypeText(text=t):
            return {"action": "type", "text": t}
        case KeyChord(keys=k) if 1 <= len(k) <= MAX_KEYS:
            return {"action": "key_press", "keys": list(k)}
        case Scroll(point=p, dx=dx, dy=dy) if (dx == 0) != (dy == 0) and abs(dx + dy) <= MAX_SCROLL:
            direction = ("right" if dx > 0 else "left") if dx else ("down" if dy > 0 else "up")
            return {
                "action": "scroll",
                "coordinate": _xy(p, geo),
                "scroll_parameters": {"scroll_direction": direction, "scroll_amount": abs(dx + dy)},
            }
        case Wait(duration_ms=ms):
            return {"action": "wait", "duration": ms / 1000}
    return None
