"""Contract actions -> the `hdesktop` tool call they came from (the inverse of
the vocabulary's readers), so an earlier step goes back into the prompt as the model's own
parsed step, never its raw text.

A session keeps actions, not tool calls, so what the actions cannot say is gone:
element descriptions come back empty, and where two calls do the same thing the
plainer one is shown (write_desktop with only press_enter is hotkey_desktop
["enter"]). Parsing what this renders gives the same actions again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# The module, not its names: every kind is matched below, by its qualified name (a
# renderer names each kind once; the readers, which build them, import the names).
from holodesk.daemon import actions as act
from holodesk.daemon.dialects.coords import CoordinateConvention, ImageGeometry
from holodesk.daemon.dialects.hdesktop.plan import Goal
from holodesk.daemon.dialects.hdesktop.vocabulary import DELETE, ENTER, SELECT_ALL
from holodesk.daemon.geometry import Point

ToolCall = dict[str, Any]


def tool_call(
    actions: Sequence[act.ActionKind], geometry: ImageGeometry | None, plan: tuple[Goal, ...] | None
) -> ToolCall | None:
    """The tool call that parses to `actions` (None: no tool of the format does)."""
    acts = tuple(actions)
    if not acts:
        if plan is not None:
            goals = [{"title": g.title, "status": g.status} for g in plan]
            return {"tool_name": "update_plan", "goals": goals}
        return {"tool_name": "write_desktop", "content": ""}
    return _pointer(acts, geometry) or _keyboard(acts) or _answer(acts)


def tool_name(actions: Sequence[act.ActionKind], plan: tuple[Goal, ...] | None) -> str:
    call = tool_call(actions, None, plan)
    return str(call["tool_name"]) if call is not None else "desktop"


def fallback_text(actions: Sequence[act.ActionKind]) -> str:
    """Actions no tool stands for (another policy's), described plainly."""
    return "; ".join(act.describe(a) for a in actions)


def _xy(point: Point, geometry: ImageGeometry | None) -> dict[str, Any]:
    if geometry is None:  # no frame size known: frame pixels
        return {"x": round(point.x), "y": round(point.y)}
    model = geometry.to_model(point)
    if geometry.convention is CoordinateConvention.UNIT:
        return {"x": round(model.x, 4), "y": round(model.y, 4)}
    return {"x": round(model.x), "y": round(model.y)}


def _pointer(acts: tuple[act.ActionKind, ...], geo: ImageGeometry | None) -> ToolCall | None:
    match acts:
        case (act.Click(point=p, button=b, count=1, modifiers=()),) if b.value in (
            "left",
            "right",
            "middle",
        ):
            call = {"tool_name": "click_desktop", "element": "", **_xy(p, geo)}
            return call if b is act.MouseButton.LEFT else {**call, "button": b.value}
        case (act.Click(point=p, button=act.MouseButton.LEFT, count=2, modifiers=()),):
            return {"tool_name": "double_click_desktop", "element": "", **_xy(p, geo)}
        case (act.Move(point=p),):
            return {"tool_name": "move_to_desktop", "element": "", **_xy(p, geo)}
        case (
            act.MouseDown(button=act.MouseButton.LEFT, point=None),
            act.MouseUp(button=act.MouseButton.LEFT, point=Point() as p),
        ):
            return {"tool_name": "drag_to_desktop", "element": "", **_xy(p, geo)}
        case (act.Scroll(point=p, dx=dx, dy=dy),) if (dx == 0) != (dy == 0) and abs(dx + dy) <= 100:
            direction = ("right" if dx > 0 else "left") if dx else ("down" if dy > 0 else "up")
            return {
                "tool_name": "scroll_desktop",
                "element": "",
                **_xy(p, geo),
                "direction": direction,
                "scroll_size": abs(dx + dy),
            }
    return None


def _keyboard(acts: tuple[act.ActionKind, ...]) -> ToolCall | None:
    write = _write(acts)
    if write is not None:
        return write
    if len(acts) == 1 and isinstance(acts[0], act.KeyDown | act.KeyUp):
        name = "key_down_desktop" if isinstance(acts[0], act.KeyDown) else "key_up_desktop"
        return {"tool_name": name, "key": acts[0].key}
    first = acts[0]
    if (
        isinstance(first, act.KeyChord)
        and 1 <= len(first.keys) <= 5
        and len(acts) <= 20
        and all(a == first for a in acts)
    ):
        call: ToolCall = {"tool_name": "hotkey_desktop", "keys": list(first.keys)}
        return call if len(acts) == 1 else {**call, "repeat_count": len(acts)}
    return _hold_and_tap(acts)


def _write(acts: tuple[act.ActionKind, ...]) -> ToolCall | None:
    rest = list(acts)
    overwrite = rest[:2] == [SELECT_ALL, DELETE]
    if overwrite:
        rest = rest[2:]
    content = ""
    head = rest[0] if rest else None
    if isinstance(head, act.TypeText):
        content = head.text
        rest = rest[1:]
    press_enter = rest == [ENTER]
    if press_enter:
        rest = []
    if rest or not (content or overwrite):
        return None  # a lone Enter is a hotkey
    call: ToolCall = {"tool_name": "write_desktop", "content": content}
    if press_enter:
        call["press_enter"] = True
    if overwrite:
        call["overwrite"] = True
    return call


def _hold_and_tap(acts: tuple[act.ActionKind, ...]) -> ToolCall | None:
    hold = [a.key for a in acts if isinstance(a, act.KeyDown)]
    n = len(hold)
    if not 1 <= n <= 3 or len(acts) < 2 * n + 1:
        return None
    downs, taps, ups = acts[:n], acts[n : len(acts) - n], acts[len(acts) - n :]
    if list(downs) != [act.KeyDown(k) for k in hold] or list(ups) != [
        act.KeyUp(k) for k in reversed(hold)
    ]:
        return None
    if not 1 <= len(taps) <= 5 or not all(
        isinstance(t, act.KeyChord) and len(t.keys) == 1 for t in taps
    ):
        return None
    tap_keys = [t.keys[0] for t in taps if isinstance(t, act.KeyChord)]
    return {"tool_name": "hold_and_tap_key_desktop", "hold_keys": hold, "tap_keys": tap_keys}


def _answer(acts: tuple[act.ActionKind, ...]) -> ToolCall | None:
    if len(acts) == 1 and isinstance(acts[0], act.Done):
        return {"tool_name": "answer", "content": acts[0].answer}
    return None
