"""The `hdesktop` vocabulary, said once: H Company's twelve desktop tools, each a
word with its reader (a tool call -> contract actions in frame pixels, and the plan
for update_plan; see plan.py), its parameters' schema (schema.py) and the form the
prompt's tool list and the docs publish, with worked examples; then the contract
options the format has no word for (its gaps) with what a model does instead. The
tool names, the schema's tools in order, the parser's table and the native tools
(native.py) are all drawn from `WORDS`.

Each reader reads its fields with the typed readers of `values`, so a malformed
field is a DialectParseError with a hint, never another exception.

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

# Alike in every family's vocabulary (the contract's kinds, the shared core's parts),
# as its readers and examples build the same actions: imports, not repeated logic.
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
from holodesk.daemon.dialects.action_space import (
    ActionField,
    ActionForm,
    ActionSpace,
    Example,
    FormMaker,
    Gap,
    Word,
    call_signature,
    json_answer,
    key_form,
    names,
    published_forms,
    readers,
)
from holodesk.daemon.dialects.base import DialectParseError
from holodesk.daemon.dialects.coords import CoordinateConvention, ImageGeometry
from holodesk.daemon.dialects.hdesktop import schema
from holodesk.daemon.dialects.hdesktop.plan import Goal
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.values import brief, key_name, model_point, number, text
from holodesk.daemon.geometry import Point

_P = Point(500, 300)
_Q = Point(700, 450)
_BUTTONS = tuple(b.value for b in MouseButton)


# --- the forms' fields -------------------------------------------------------------------


def _xy(point: Point) -> dict[str, int]:
    return {"x": round(point.x), "y": round(point.y)}


def _at(what: str) -> tuple[ActionField, ...]:
    return (
        ActionField("element", "text", f"{what}: its visible text, look and position"),
        ActionField("point", "point", "where, as x and y"),
    )


def _key(name: str, what: str) -> ActionField:
    return ActionField(name, "key", what)


def _keys(name: str, most: int, what: str) -> ActionField:
    return ActionField(name, "keys", what, min_items=1, max_items=most)


# --- the forms ---------------------------------------------------------------------------


def _update_plan(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "Set the whole plan: goals with a title starting with a verb and a status todo, "
        "running, done or failed (at most one running). Nothing happens on the desktop; "
        "the plan stays in view.",
        (
            ActionField(
                "goals", "text", 'the goals, a list of {"title": ..., "status": ...}',
                min_items=1, max_items=schema.MAX_GOALS,
            ),
        ),
        (
            Example(
                {"goals": [{"title": "Open the report", "status": "running"},
                           {"title": "Mail it to finance", "status": "todo"}]},
                (),
                "This takes a few steps: plan first.",
            ),
        ),
    )  # fmt: skip


def _write(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "Type text where the keyboard focus is (no click first); overwrite selects all "
        "and deletes first (ctrl+a, delete), press_enter presses Enter after.",
        (
            ActionField("content", "text", "the text to type"),
            ActionField("press_enter", "choice", "Enter after typing", required=False,
                        choices=("true", "false"), default="false"),
            ActionField("overwrite", "choice", "clear the field first", required=False,
                        choices=("true", "false"), default="false"),
        ),
        (
            Example({"content": "Quarterly report"}, (TypeText("Quarterly report"),)),
            Example(
                {"content": "Paris", "press_enter": True, "overwrite": True},
                (SELECT_ALL, DELETE, TypeText("Paris"), ENTER),
            ),
        ),
    )  # fmt: skip


def _click(name: str, spec: DialectSpec) -> ActionForm:
    el = {"element": "the Save button"}
    return ActionForm(
        name,
        "Click at (x, y) with the left, right or middle button.",
        (
            *_at("the element to click"),
            ActionField(
                "button", "choice", "the mouse button", required=False,
                choices=schema.BUTTONS, default="left",
            ),
        ),
        (
            Example({**el, **_xy(_P)}, (Click(_P),), "The Save button is at the top."),
            Example({**el, **_xy(_P), "button": "right"}, (Click(_P, MouseButton.RIGHT),)),
            Example({**el, **_xy(_P), "button": "middle"}, (Click(_P, MouseButton.MIDDLE),)),
            Example({**el, **_xy(_P), "button": "left"}, (Click(_P, MouseButton.LEFT),)),
        ),
    )  # fmt: skip


def _at_form(summary: str, what: str, element: str, point: Point,
             produces: tuple[ActionKind, ...]) -> FormMaker:  # fmt: skip
    """double_click, move_to, drag_to: an element and its x, y."""

    def make(name: str, spec: DialectSpec) -> ActionForm:
        example = Example({"element": element, **_xy(point)}, produces)
        return ActionForm(name, summary, _at(what), (example,))

    return make


def _scroll(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "Move the pointer to (x, y), then turn the wheel up, down, left or right.",
        (
            *_at("what to scroll"),
            ActionField("direction", "choice", "which way", choices=schema.DIRECTIONS),
            ActionField(
                "scroll_size", "integer", "wheel notches", required=False, minimum=1,
                maximum=schema.MAX_SCROLL, default=str(schema.DEFAULT_SCROLL),
            ),
        ),
        (
            Example({"element": "the list", **_xy(_P), "direction": "down"},
                    (Scroll(_P, dy=schema.DEFAULT_SCROLL),)),
            Example({"element": "the list", **_xy(_P), "direction": "up", "scroll_size": 3},
                    (Scroll(_P, dy=-3),)),
            Example({"element": "the sheet", **_xy(_P), "direction": "left", "scroll_size": 2},
                    (Scroll(_P, dx=-2),)),
            Example({"element": "the sheet", **_xy(_P), "direction": "right", "scroll_size": 100},
                    (Scroll(_P, dx=100),)),
        ),
    )  # fmt: skip


def _hotkey(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "Press keys together and release them in reverse order, repeat_count times.",
        (
            _keys("keys", schema.MAX_HOTKEY_KEYS, 'the keys, e.g. ["ctrl", "s"]'),
            ActionField("repeat_count", "integer", "how many times", required=False,
                        minimum=1, maximum=schema.MAX_REPEAT, default="1"),
        ),
        (
            Example({"keys": ["ctrl", "s"]}, (KeyChord(("ctrl", "s")),)),
            Example({"keys": ["down"], "repeat_count": 3}, (KeyChord(("down",)),) * 3),
        ),
    )  # fmt: skip


def _hold_and_tap(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "Hold keys down while tapping others one after another.",
        (
            _keys("hold_keys", schema.MAX_HOLD_KEYS, "the keys held throughout"),
            _keys("tap_keys", schema.MAX_TAP_KEYS, "the keys tapped, in order"),
        ),
        (
            Example(
                {"hold_keys": ["shift"], "tap_keys": ["down", "down"]},
                (KeyDown("shift"), KeyChord(("down",)), KeyChord(("down",)), KeyUp("shift")),
            ),
        ),
    )


def _answer(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "End the task with the complete final answer.",
        (ActionField("content", "text", "the answer"),),
        (Example({"content": "The total is 42.10 EUR."}, (Done("The total is 42.10 EUR."),)),),
    )


# --- the readers -------------------------------------------------------------------------


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


def _read_point(obj: Obj, geo: ImageGeometry) -> Point:
    if obj.get("x") is None or obj.get("y") is None:
        raise DialectParseError(
            "the tool needs x and y", "Give the target as x and y in [0, 1000]."
        )
    return model_point(obj["x"], obj["y"], geo)


def _read_flag(obj: Obj, name: str) -> bool:
    raw = obj.get(name, False)
    if raw is None:
        return False
    if not isinstance(raw, bool):
        raise DialectParseError(f"{name} is {brief(raw)}", f"Give {name} as true or false.")
    return raw


def _read_whole(obj: Obj, name: str, default: int, most: int) -> int:
    raw = obj.get(name)
    if raw is None:
        return default
    value = number(raw, name)
    if value != round(value) or not 1 <= value <= most:
        raise DialectParseError(f"{name} is {value:g}", f"{name} is a whole number 1 to {most}.")
    return int(value)


def _read_keys(obj: Obj, name: str, most: int, spec: DialectSpec) -> tuple[str, ...]:
    raw = obj.get(name)
    if isinstance(raw, str):  # one key given bare
        raw = [raw]
    if not isinstance(raw, list) or not 1 <= len(raw) <= most:
        raise DialectParseError(
            f"{name} is {brief(raw)}", f'Give {name} as a list of 1 to {most} keys, e.g. ["ctrl"].'
        )
    return tuple(key_name(k, spec.key_aliases) for k in raw)


def _read_button(obj: Obj) -> MouseButton:
    raw = obj.get("button", "left")
    if raw is None:
        return MouseButton.LEFT
    if isinstance(raw, str) and raw.strip().lower() in schema.BUTTONS:
        return MouseButton(raw.strip().lower())
    raise DialectParseError(f"button is {brief(raw)}", "Use button left, right or middle.")


def _read_update_plan(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
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


def _read_write(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    content = text(obj, "content")
    actions: list[ActionKind] = [SELECT_ALL, DELETE] if _read_flag(obj, "overwrite") else []
    if content:
        actions.append(TypeText(content))
    if _read_flag(obj, "press_enter"):
        actions.append(ENTER)
    return ToolEffect(tuple(actions))


def _read_click(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    return ToolEffect((Click(_read_point(obj, geo), button=_read_button(obj)),))


def _read_double_click(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    return ToolEffect((Click(_read_point(obj, geo), count=2),))


def _read_move(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    return ToolEffect((Move(_read_point(obj, geo)),))


def _read_drag(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    # From the pointer as it is (see the module docstring), to (x, y).
    return ToolEffect(
        (MouseDown(MouseButton.LEFT), MouseUp(MouseButton.LEFT, _read_point(obj, geo)))
    )


_DIRECTIONS = {"down": (0, 1), "up": (0, -1), "right": (1, 0), "left": (-1, 0)}


def _read_scroll(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    raw = obj.get("direction")
    direction = raw.strip().lower() if isinstance(raw, str) else None
    if direction not in _DIRECTIONS:
        raise DialectParseError(f"direction is {brief(raw)}", "Scroll up, down, left or right.")
    size = _read_whole(obj, "scroll_size", schema.DEFAULT_SCROLL, schema.MAX_SCROLL)
    dx, dy = _DIRECTIONS[direction]
    return ToolEffect((Scroll(_read_point(obj, geo), dx=dx * size, dy=dy * size),))


def _read_key_down(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    return ToolEffect((KeyDown(key_name(obj.get("key"), spec.key_aliases)),))


def _read_key_up(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    return ToolEffect((KeyUp(key_name(obj.get("key"), spec.key_aliases)),))


def _read_hotkey(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    keys = _read_keys(obj, "keys", schema.MAX_HOTKEY_KEYS, spec)
    repeat = _read_whole(obj, "repeat_count", 1, schema.MAX_REPEAT)
    return ToolEffect(tuple(KeyChord(keys) for _ in range(repeat)))


def _read_hold_and_tap(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    hold = _read_keys(obj, "hold_keys", schema.MAX_HOLD_KEYS, spec)
    tap = _read_keys(obj, "tap_keys", schema.MAX_TAP_KEYS, spec)
    return ToolEffect(
        (
            *(KeyDown(k) for k in hold),
            *(KeyChord((k,)) for k in tap),
            *(KeyUp(k) for k in reversed(hold)),
        )
    )


def _read_answer(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> ToolEffect:
    return ToolEffect((Done(text(obj, "content", required=False)),))


# --- the tools written back: actions -> the arguments of the call they came from --------
# A session keeps actions, not tool calls (render.py), so what the actions cannot say is
# gone: element descriptions come back empty, and where two calls do the same thing the
# plainer one is shown (write_desktop with only press_enter is hotkey_desktop ["enter"]).

Arguments = dict[str, Any]
Actions = tuple[ActionKind, ...]


def _model_xy(point: Point, geometry: ImageGeometry | None) -> Arguments:
    if geometry is None:  # no frame size known: frame pixels
        return {"x": round(point.x), "y": round(point.y)}
    model = geometry.to_model(point)
    if geometry.convention is CoordinateConvention.UNIT:
        return {"x": round(model.x, 4), "y": round(model.y, 4)}
    return {"x": round(model.x), "y": round(model.y)}


def _back_update_plan(acts: Actions, geo: ImageGeometry | None, plan: Plan) -> Arguments | None:
    if acts or plan is None:
        return None
    return {"goals": [{"title": g.title, "status": g.status} for g in plan]}


def _back_write(acts: Actions, geo: ImageGeometry | None, plan: Plan) -> Arguments | None:
    if not acts:  # a step that did nothing, and set no plan
        return {"content": ""}
    rest = list(acts)
    overwrite = rest[:2] == [SELECT_ALL, DELETE]
    if overwrite:
        rest = rest[2:]
    content = ""
    head = rest[0] if rest else None
    if isinstance(head, TypeText):
        content = head.text
        rest = rest[1:]
    press_enter = rest == [ENTER]
    if press_enter:
        rest = []
    if rest or not (content or overwrite):
        return None  # a lone Enter is a hotkey
    args: Arguments = {"content": content}
    if press_enter:
        args["press_enter"] = True
    if overwrite:
        args["overwrite"] = True
    return args


def _back_click(acts: Actions, geo: ImageGeometry | None, plan: Plan) -> Arguments | None:
    match acts:
        case (Click(point=p, button=b, count=1, modifiers=()),) if b.value in schema.BUTTONS:
            args = {"element": "", **_model_xy(p, geo)}
            return args if b is MouseButton.LEFT else {**args, "button": b.value}
    return None


def _back_double_click(acts: Actions, geo: ImageGeometry | None, plan: Plan) -> Arguments | None:
    match acts:
        case (Click(point=p, button=MouseButton.LEFT, count=2, modifiers=()),):
            return {"element": "", **_model_xy(p, geo)}
    return None


def _back_move(acts: Actions, geo: ImageGeometry | None, plan: Plan) -> Arguments | None:
    match acts:
        case (Move(point=p),):
            return {"element": "", **_model_xy(p, geo)}
    return None


def _back_drag(acts: Actions, geo: ImageGeometry | None, plan: Plan) -> Arguments | None:
    match acts:
        case (
            MouseDown(button=MouseButton.LEFT, point=None),
            MouseUp(button=MouseButton.LEFT, point=Point() as p),
        ):
            return {"element": "", **_model_xy(p, geo)}
    return None


def _back_scroll(acts: Actions, geo: ImageGeometry | None, plan: Plan) -> Arguments | None:
    match acts:
        case (Scroll(point=p, dx=dx, dy=dy),) if (dx == 0) != (dy == 0) and abs(
            dx + dy
        ) <= schema.MAX_SCROLL:
            direction = ("right" if dx > 0 else "left") if dx else ("down" if dy > 0 else "up")
            return {
                "element": "",
                **_model_xy(p, geo),
                "direction": direction,
                "scroll_size": abs(dx + dy),
            }
    return None


def _back_key(kind: type[KeyDown] | type[KeyUp]) -> Back:
    def back(acts: Actions, geo: ImageGeometry | None, plan: Plan) -> Arguments | None:
        if len(acts) == 1 and isinstance(acts[0], kind):
            return {"key": acts[0].key}
        return None

    return back


def _back_hotkey(acts: Actions, geo: ImageGeometry | None, plan: Plan) -> Arguments | None:
    first = acts[0] if acts else None
    if (
        isinstance(first, KeyChord)
        and 1 <= len(first.keys) <= schema.MAX_HOTKEY_KEYS
        and len(acts) <= schema.MAX_REPEAT
        and all(a == first for a in acts)
    ):
        args: Arguments = {"keys": list(first.keys)}
        return args if len(acts) == 1 else {**args, "repeat_count": len(acts)}
    return None


def _back_hold_and_tap(acts: Actions, geo: ImageGeometry | None, plan: Plan) -> Arguments | None:
    hold = [a.key for a in acts if isinstance(a, KeyDown)]
    n = len(hold)
    if not 1 <= n <= schema.MAX_HOLD_KEYS or len(acts) < 2 * n + 1:
        return None
    downs, taps, ups = acts[:n], acts[n : len(acts) - n], acts[len(acts) - n :]
    if list(downs) != [KeyDown(k) for k in hold] or list(ups) != [KeyUp(k) for k in reversed(hold)]:
        return None
    if not 1 <= len(taps) <= schema.MAX_TAP_KEYS or not all(
        isinstance(t, KeyChord) and len(t.keys) == 1 for t in taps
    ):
        return None
    tap_keys = [t.keys[0] for t in taps if isinstance(t, KeyChord)]
    return {"hold_keys": hold, "tap_keys": tap_keys}


def _back_answer(acts: Actions, geo: ImageGeometry | None, plan: Plan) -> Arguments | None:
    if len(acts) == 1 and isinstance(acts[0], Done):
        return {"content": acts[0].answer}
    return None


# --- the vocabulary ------------------------------------------------------------------------


Plan = tuple[Goal, ...] | None
# (a step's actions, its geometry, its plan) -> the arguments of the call that parses to
# them (None: not this tool).
Back = Callable[[Actions, ImageGeometry | None, Plan], Arguments | None]


@dataclass(frozen=True)
class Tool:
    """What the parser runs for a tool, its parameters' schema (schema.py), and the
    inverse of `effect`, for the history (render.py)."""

    effect: Handler
    parameters: schema.ParameterMaker
    back: Back


# The harness's own order, which the schema's tools and the prompt's tool list follow.
WORDS: tuple[Word[Tool], ...] = (
    Word("update_plan", Tool(_read_update_plan, schema.update_plan, _back_update_plan),
         (_update_plan,)),
    Word("write_desktop", Tool(_read_write, schema.write, _back_write), (_write,)),
    Word("click_desktop", Tool(_read_click, schema.click, _back_click), (_click,)),
    Word("double_click_desktop",
         Tool(_read_double_click, schema.at_point("Double-click at (x, y)."), _back_double_click),
         (_at_form("Double-click at (x, y) with the left button.",
                   "the element to double-click", "report.pdf", _P, (Click(_P, count=2),)),)),
    Word("move_to_desktop",
         Tool(_read_move, schema.at_point("Move the pointer to (x, y)."), _back_move),
         (_at_form("Move the pointer to (x, y) without clicking (hover; where a drag starts).",
                   "the element to point at", "the card", _P, (Move(_P),)),)),
    Word("drag_to_desktop",
         Tool(_read_drag, schema.at_point(
             "Press the left button where the pointer is, move to (x, y), release."),
              _back_drag),
         (_at_form("Press the left button where the pointer is now, move to (x, y), release; "
                   "move_to_desktop first sets where the drag starts.",
                   "where the drag ends", "the Done column", _Q,
                   (MouseDown(MouseButton.LEFT), MouseUp(MouseButton.LEFT, _Q))),)),
    Word("scroll_desktop", Tool(_read_scroll, schema.scroll, _back_scroll), (_scroll,)),
    Word("key_down_desktop",
         Tool(_read_key_down, schema.one_key(
             "Press a key and keep it down (release it with key_up_desktop).",
             "the key to press"), _back_key(KeyDown)),
         (key_form(KeyDown, "Press a key and keep it down (across clicks); release it with "
                   "key_up_desktop.", _key("key", "the key to press")),)),
    Word("key_up_desktop",
         Tool(_read_key_up, schema.one_key(
             "Release a key pressed with key_down_desktop.", "the key to release"),
              _back_key(KeyUp)),
         (key_form(KeyUp, "Release a key pressed with key_down_desktop.",
                   _key("key", "the key to release")),)),
    Word("hotkey_desktop", Tool(_read_hotkey, schema.hotkey, _back_hotkey), (_hotkey,)),
    Word("hold_and_tap_key_desktop",
         Tool(_read_hold_and_tap, schema.hold_and_tap, _back_hold_and_tap), (_hold_and_tap,)),
    Word("answer", Tool(_read_answer, schema.answer, _back_answer), (_answer,)),
)  # fmt: skip

TOOL_NAMES = names(WORDS)
# The parser's table, from the vocabulary.
HANDLERS = readers(WORDS)


def tool_schemas(
    convention: CoordinateConvention, aliases: Mapping[str, str]
) -> list[dict[str, Any]]:
    """One object schema per tool, in TOOL_NAMES order."""
    return [schema.tool(w.name, w.read.parameters(convention, aliases)) for w in WORDS]


def tool_effect(raw: Any, spec: DialectSpec, geometry: ImageGeometry) -> ToolEffect:
    """What the tool call does; DialectParseError for anything unusable."""
    if not isinstance(raw, dict):
        raise DialectParseError(
            f"tool_call is {brief(raw)}, not an object",
            'Give tool_call as {"tool_name": <name>, ...its arguments}.',
        )
    name = raw.get("tool_name")
    tool = HANDLERS.get(name) if isinstance(name, str) else None
    if tool is None:
        raise DialectParseError(
            f"unknown tool_name {brief(name)}", "Use one of: " + ", ".join(TOOL_NAMES) + "."
        )
    return tool.effect(raw, spec, geometry)


def _buttons(kind: str) -> tuple[str, ...]:
    return tuple(f"{kind}.button=MOUSE_BUTTON_{b.upper()}" for b in _BUTTONS)


_MODS = ("ALT", "CTRL", "META", "SHIFT")

GAPS = (
    Gap(("click.count=3",), "no triple click: double_click_desktop, then hold_and_tap "
        'shift + end, or hotkey_desktop ["home"] then hold_and_tap shift + end'),
    Gap(("click.button=MOUSE_BUTTON_BACK", "click.button=MOUSE_BUTTON_FORWARD"),
        'no side buttons: hotkey_desktop ["alt", "left"] / ["alt", "right"] in a browser'),
    Gap(tuple(f"click.modifiers=MODIFIER_{m}" for m in _MODS),
        "key_down_desktop, click_desktop, key_up_desktop, one step each"),
    Gap(("mouse_down", "mouse_down.point", *_buttons("mouse_down"),
         "mouse_up", "mouse_up.point", *_buttons("mouse_up")),
        "only as drag_to_desktop's left press where the pointer is and release at x, y"),
    Gap(("drag", "drag.path", "drag.path>2", "drag.duration_ms", *_buttons("drag"),
         *(f"drag.modifiers=MODIFIER_{m}" for m in _MODS)),
        "move_to_desktop to the start, then drag_to_desktop to the end (left button; "
        "key_down_desktop first to hold a modifier)"),
    Gap(("wait", "wait.duration_ms"), "no wait: any step looks at the screen again "
        "(update_plan is one that does nothing)"),
    Gap(("fail", "fail.reason"), "no failure: answer says what could not be done"),
    Gap(("ask_user", "ask_user.question"), "no question to a person: answer asks it"),
    Gap(("navigate", "navigate.url"),
        'hotkey_desktop ["ctrl", "l"], then write_desktop the address with press_enter'),
)  # fmt: skip


def _signature(form: ActionForm) -> str:
    """`- click_desktop(element, x, y, button=left): ...`: an optional field's default."""
    return call_signature(form, lambda name, field: f"{name}={field.default}")


def hdesktop_action_space(spec: DialectSpec) -> ActionSpace:
    return ActionSpace(
        forms=published_forms(WORDS, spec),
        write=json_answer(None, "tool_call", "tool_name"),  # {note, thought, tool_call}
        signature=_signature,
        gaps=GAPS,
        answer_format=(
            'One JSON object {"note": str | null, "thought": str, "tool_call": '
            '{"tool_name": <tool>, <arguments>}}: exactly one tool call. x and y are '
            "integers in [0, 1000]."
        ),
        notes=(
            "Each earlier step comes back as its parsed JSON, then its result as "
            '<tool_output tool="NAME">...</tool_output> or <error tool="NAME">...</error>.',
            "Keys: the contract's names, or pyautogui's (esc, cmd, win, pgdn, shiftleft...).",
        ),
    )
