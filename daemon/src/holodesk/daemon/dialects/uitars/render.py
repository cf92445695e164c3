"""Contract actions -> the UI-TARS calls they came from, for the history: each earlier
step replayed as the model's own Action line, in its own coordinates (the inverse
of the vocabulary's readers, vocabulary.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

# The module, not its names: every kind is matched below, by its qualified name (a
# renderer names each kind once; the readers, which build them, import the names).
from holodesk.daemon import actions as act
from holodesk.daemon.dialects.coords import CoordinateConvention, ImageGeometry
from holodesk.daemon.geometry import Point

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


def render(actions: Sequence[act.ActionKind], show: PointText) -> str:
    calls: list[str] = []
    index = 0
    while index < len(actions):
        action = actions[index]
        following = actions[index + 1] if index + 1 < len(actions) else None
        if isinstance(action, act.TypeText) and following == act.KeyChord(("enter",)):
            calls.append(f"type(content={quote(action.text + chr(10))})")
            index += 2
            continue
        calls.append(_render_one(action, show))
        index += 1
    return "\n\n".join(calls)


def _render_one(action: act.ActionKind, show: PointText) -> str:
    match action:
        case act.Click(point=p, button=b, count=c):
            name = {
                (act.MouseButton.LEFT, 2): "left_double",
                (act.MouseButton.LEFT, 3): "left_triple",
                (act.MouseButton.RIGHT, 1): "right_single",
                (act.MouseButton.MIDDLE, 1): "middle_single",
            }.get((b, c), "click")
            return f"{name}(start_box='{show(p)}')"
        case act.Move(point=p):
            return f"hover(start_box='{show(p)}')"
        case act.MouseDown(button=b, point=p) | act.MouseUp(button=b, point=p):
            name = "mouse_down" if isinstance(action, act.MouseDown) else "mouse_up"
            where = "" if p is None else f"start_box='{show(p)}', "
            return f"{name}({where}button='{b.value}')"
        case act.Drag(path=path):
            return f"drag(start_box='{show(path[0])}', end_box='{show(path[-1])}')"
        case act.Scroll(point=p, dx=dx, dy=dy):
            direction = (
                ("down" if dy > 0 else "up") if dy or not dx else ("right" if dx > 0 else "left")
            )
            return f"scroll(start_box='{show(p)}', direction='{direction}')"
        case act.TypeText(text=t):
            return f"type(content={quote(t)})"
        case act.KeyChord(keys=keys):
            return f"hotkey(key={quote(' '.join(keys))})"
        case act.KeyDown(key=k):
            return f"keydown(key={quote(k)})"
        case act.KeyUp(key=k):
            return f"keyup(key={quote(k)})"
        case act.Wait():
            return "wait()"
        case act.Done(answer=a):
            return f"finished(content={quote(a)})"
        case act.AskUser():
            return "call_user()"
        case act.Fail(reason=r):
            return f"finished(content={quote(r)})"
    raise AssertionError(f"unhandled action kind {action!r}")  # pragma: no cover
