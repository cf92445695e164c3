"""The `nemotron-tools` family, rendering history: the actions of an earlier step ->
the one call that asks for them (coordinates back in 0-1 of the screenshot), so the
conversation replays each step in the model's own words.

Apart from the reading (vocabulary.py) because it runs the other way and must stay
total: an action the tools cannot say gives None (the prompt then falls back to
text), never an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# The module, not its names: every kind is matched below, by its qualified name (a
# renderer names each kind once; the readers, which build them, import the names).
from holodesk.daemon import actions as act
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.nemotron.schema import HISTORY, MAX_ACTIONS, MAX_KEYS, MAX_SCROLL
from holodesk.daemon.dialects.nemotron.vocabulary import CLICKS
from holodesk.daemon.dialects.tool_prompt import RenderedCall
from holodesk.daemon.geometry import Point


def call_of(
    actions: Sequence[act.ActionKind], note: str, geometry: ImageGeometry | None
) -> RenderedCall | None:
    acts = tuple(actions)
    match acts:
        case (act.Done(answer=a),):
            return RenderedCall("terminate", {"status": "success", "answer": a})
        case (act.Fail(reason=r),):
            return RenderedCall("terminate", {"status": "failure", "answer": r})
        case (act.Navigate(url=u),):
            return RenderedCall("navigate", {"url": u})
        case (act.KeyChord(keys=("ctrl", "t")), act.Navigate(url=u)):
            return RenderedCall("tabs_create", {"url": u})
        case (act.KeyChord(keys=("ctrl", "t")),):
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


def _item(action: act.ActionKind, geo: ImageGeometry | None) -> dict[str, Any] | None:
    match action:
        case act.Click(point=p, button=b, count=c, modifiers=()):
            name = next((n for n, (cb, cc, _) in CLICKS.items() if (cb, cc) == (b, c)), None)
            return None if name is None else {"action": name, "coordinate": _xy(p, geo)}
        case act.Move(point=p):
            return {"action": "mouse_move", "coordinate": _xy(p, geo)}
        case act.Drag(path=(start, end), button=act.MouseButton.LEFT, modifiers=(), duration_ms=0):
            return {
                "action": "left_click_drag",
                "start_coordinate": _xy(start, geo),
                "coordinate": _xy(end, geo),
            }
        case act.TypeText(text=t):
            return {"action": "type", "text": t}
        case act.KeyChord(keys=k) if 1 <= len(k) <= MAX_KEYS:
            return {"action": "key_press", "keys": list(k)}
        case act.Scroll(point=p, dx=dx, dy=dy) if (dx == 0) != (dy == 0) and abs(
            dx + dy
        ) <= MAX_SCROLL:
            direction = ("right" if dx > 0 else "left") if dx else ("down" if dy > 0 else "up")
            return {
                "action": "scroll",
                "coordinate": _xy(p, geo),
                "scroll_parameters": {"scroll_direction": direction, "scroll_amount": abs(dx + dy)},
            }
        case act.Wait(duration_ms=ms):
            return {"action": "wait", "duration": ms / 1000}
    return None
