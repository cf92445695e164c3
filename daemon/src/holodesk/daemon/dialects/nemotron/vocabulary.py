"""The `nemotron-tools` vocabulary, said once: the five tools and the computer tool's
actions, each a word with its reader (arguments -> contract actions in frame pixels,
or a DialectParseError that says what to fix), its schema (schema.py) and the forms
the prompt's tool list and the docs publish, with worked examples; then the GAPS
(what the five tools cannot say) and how one answer is written as a tool reply. The
function tools a request carries, the computer action schemas and the readers' tables
are all drawn from `TOOLS` and `COMPUTER`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# Alike in every family's vocabulary (the contract's kinds, the shared core's parts),
# as its readers and examples build the same actions: imports, not repeated logic.
from holodesk.daemon.actions import (
    ActionKind,
    Click,
    Done,
    Drag,
    Fail,
    KeyChord,
    Modifier,
    MouseButton,
    Move,
    Navigate,
    Scroll,
    TypeText,
    Wait,
)
from holodesk.daemon.dialects.action_space import (
    ActionField,
    ActionForm,
    ActionSpace,
    Example,
    FormMaker,
    Gap,
    Word,
    names,
    published_forms,
    readers,
)
from holodesk.daemon.dialects.base import DialectParseError
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.nemotron import schema
from holodesk.daemon.dialects.nemotron.schema import (
    DIRECTIONS,
    HISTORY,
    MAX_ACTIONS,
    MAX_KEYS,
    MAX_SCROLL,
    MAX_TAB,
    NEW_TAB,
)
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.tool_dialect import CallEffect, FunctionTool
from holodesk.daemon.dialects.values import brief, key_name, number, point_value, text
from holodesk.daemon.geometry import Point

_P = Point(0.5, 0.3)
_Q = Point(0.7, 0.45)
Item = Mapping[str, Any]

# The clicks: name -> the button, the count, and what the schema says of it.
CLICKS: dict[str, tuple[MouseButton, int, str]] = {
    "left_click": (MouseButton.LEFT, 1, "Click the left button at coordinate."),
    "right_click": (MouseButton.RIGHT, 1, "Click the right button at coordinate."),
    "middle_click": (MouseButton.MIDDLE, 1, "Click the middle button at coordinate."),
    "double_click": (MouseButton.LEFT, 2, "Double-click at coordinate."),
    "triple_click": (
        MouseButton.LEFT, 3, "Triple-click at coordinate (selects a line or paragraph)."
    ),
}  # fmt: skip


# --- the computer actions: readers ---------------------------------------------------------


def _at(item: Item, name: str, geo: ImageGeometry) -> Point:
    if item.get(name) is None:
        raise DialectParseError(f"the action has no {name}", f"Give {name} as [x, y] in 0-1.")
    return point_value(item[name], geo, name)


def _clicker(button: MouseButton, count: int) -> ComputerReader:
    def read(item: Item, where: str, spec: DialectSpec, geo: ImageGeometry) -> ActionKind:
        return Click(_at(item, "coordinate", geo), button=button, count=count)

    return read


def _read_move(item: Item, where: str, spec: DialectSpec, geo: ImageGeometry) -> ActionKind:
    return Move(_at(item, "coordinate", geo))


def _read_drag(item: Item, where: str, spec: DialectSpec, geo: ImageGeometry) -> ActionKind:
    return Drag((_at(item, "start_coordinate", geo), _at(item, "coordinate", geo)))


def _read_type(item: Item, where: str, spec: DialectSpec, geo: ImageGeometry) -> ActionKind:
    return TypeText(text(item, "text"))


def _read_key_press(item: Item, where: str, spec: DialectSpec, geo: ImageGeometry) -> ActionKind:
    raw = item.get("keys", item.get("key"))
    keys = [raw] if isinstance(raw, str) else raw
    if not isinstance(keys, list) or not 1 <= len(keys) <= MAX_KEYS:
        raise DialectParseError(
            f"{where}.keys is {brief(raw)}", f"Give keys as a list of 1 to {MAX_KEYS} keys."
        )
    return KeyChord(tuple(key_name(k, spec.key_aliases) for k in keys))


def _read_scroll(item: Item, where: str, spec: DialectSpec, geo: ImageGeometry) -> ActionKind:
    params = item.get("scroll_parameters")
    if not isinstance(params, dict):
        raise DialectParseError(
            f"{where}.scroll_parameters is {brief(params)}",
            "Give scroll_parameters as {scroll_direction, scroll_amount}.",
        )
    direction = params.get("scroll_direction")
    if not isinstance(direction, str) or direction not in DIRECTIONS:
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


def _read_wait(item: Item, where: str, spec: DialectSpec, geo: ImageGeometry) -> ActionKind:
    seconds = number(item.get("duration"), "duration")
    if not 0 <= seconds <= spec.max_wait_s:
        raise DialectParseError(
            f"duration is {seconds:g} s", f"Wait 0 to {spec.max_wait_s:g} seconds."
        )
    return Wait(round(seconds * 1000))


# --- the computer actions written back: an action -> its item's fields besides "action" --

Fields = dict[str, Any]


def _model_xy(point: Point, geometry: ImageGeometry | None) -> list[float]:
    if geometry is None:  # no frame size known: frame pixels, said as they are
        return [round(point.x, 1), round(point.y, 1)]
    model = geometry.to_model(point)
    return [round(model.x, 4), round(model.y, 4)]


def _back_click(button: MouseButton, count: int) -> ComputerBack:
    def back(action: ActionKind, geo: ImageGeometry | None) -> Fields | None:
        match action:
            case Click(point=p, button=b, count=c, modifiers=()) if (b, c) == (button, count):
                return {"coordinate": _model_xy(p, geo)}
        return None

    return back


def _back_move(action: ActionKind, geo: ImageGeometry | None) -> Fields | None:
    match action:
        case Move(point=p):
            return {"coordinate": _model_xy(p, geo)}
    return None


def _back_drag(action: ActionKind, geo: ImageGeometry | None) -> Fields | None:
    match action:
        case Drag(path=(start, end), button=MouseButton.LEFT, modifiers=(), duration_ms=0):
            return {"start_coordinate": _model_xy(start, geo), "coordinate": _model_xy(end, geo)}
    return None


def _back_type(action: ActionKind, geo: ImageGeometry | None) -> Fields | None:
    return {"text": action.text} if isinstance(action, TypeText) else None


def _back_key_press(action: ActionKind, geo: ImageGeometry | None) -> Fields | None:
    match action:
        case KeyChord(keys=k) if 1 <= len(k) <= MAX_KEYS:
            return {"keys": list(k)}
    return None


def _back_scroll(action: ActionKind, geo: ImageGeometry | None) -> Fields | None:
    match action:
        case Scroll(point=p, dx=dx, dy=dy) if (dx == 0) != (dy == 0) and abs(dx + dy) <= MAX_SCROLL:
            direction = ("right" if dx > 0 else "left") if dx else ("down" if dy > 0 else "up")
            return {
                "coordinate": _model_xy(p, geo),
                "scroll_parameters": {"scroll_direction": direction, "scroll_amount": abs(dx + dy)},
            }
    return None


def _back_wait(action: ActionKind, geo: ImageGeometry | None) -> Fields | None:
    return {"duration": action.duration_ms / 1000} if isinstance(action, Wait) else None


# --- the computer actions: forms -----------------------------------------------------------

_COORD = ActionField("coordinate", "point", "[x, y] in 0-1")
_XY = [_P.x, _P.y]


def _computer_form(summary: str, fields: tuple[ActionField, ...],
                   examples: tuple[Example, ...]) -> FormMaker:  # fmt: skip
    """A computer action's form, published as "computer.<its name>"."""

    def make(name: str, spec: DialectSpec) -> ActionForm:
        return ActionForm(f"computer.{name}", summary, fields, examples)

    return make


def _click_form(name: str) -> FormMaker:
    button, count, _ = CLICKS[name]
    return _computer_form(
        f"{name.replace('_', ' ').capitalize()} at coordinate.",
        (_COORD,),
        (Example({"coordinate": _XY}, (Click(_P, button=button, count=count),),
                 "The target is there."),),
    )  # fmt: skip


def _wait_form(name: str, spec: DialectSpec) -> ActionForm:
    field = ActionField("duration", "number", "seconds", minimum=0, maximum=spec.max_wait_s)
    example = Example({"duration": 2}, (Wait(2000),))
    return ActionForm(f"computer.{name}", "Wait duration seconds.", (field,), (example,))


# (the action object, where it is in the call, spec, geometry) -> the contract action.
ComputerReader = Callable[[Item, str, DialectSpec, ImageGeometry], ActionKind]
# (a contract action, the step's geometry) -> the fields of the item that reads as it
# (None: not this action).
ComputerBack = Callable[[ActionKind, ImageGeometry | None], Fields | None]


@dataclass(frozen=True)
class ComputerAction:
    """What the parser runs for a computer action, its schema (schema.py), and the
    inverse of `read`, for the history (render.py)."""

    read: ComputerReader
    properties: schema.Properties
    description: str
    back: ComputerBack


COMPUTER: tuple[Word[ComputerAction], ...] = (
    *(
        Word(name, ComputerAction(_clicker(button, count), schema.at, description,
                            _back_click(button, count)),
             (_click_form(name),))
        for name, (button, count, description) in CLICKS.items()
    ),
    Word("mouse_move",
         ComputerAction(_read_move, schema.at, "Move the pointer to coordinate (hover).",
                        _back_move),
         (_computer_form("Move the pointer to coordinate.", (_COORD,),
                         (Example({"coordinate": _XY}, (Move(_P),)),)),)),
    Word("left_click_drag",
         ComputerAction(_read_drag, schema.drag, "Press the left button at start_coordinate, "
                        "move to coordinate, release.", _back_drag),
         (_computer_form(
             "Drag with the left button from start_coordinate to coordinate.",
             (ActionField("start_coordinate", "point", "[x, y] in 0-1, where it starts"), _COORD),
             (Example({"start_coordinate": _XY, "coordinate": [_Q.x, _Q.y]},
                      (Drag((_P, _Q)),)),)),)),
    Word("type",
         ComputerAction(_read_type, schema.type_text, "Type text where the keyboard focus is.",
                        _back_type),
         (_computer_form("Type text where the keyboard focus is.",
                         (ActionField("text", "text", "the text"),),
                         (Example({"text": "Quarterly report"},
                                  (TypeText("Quarterly report"),)),)),)),
    Word("key_press",
         ComputerAction(_read_key_press, schema.key_press,
                        'Press keys together, e.g. ["ctrl", "c"], or one key, e.g. ["enter"].',
                        _back_key_press),
         (_computer_form("Press keys together (a shortcut, or one key).",
                         (ActionField("keys", "keys", "keys pressed together", min_items=1,
                                      max_items=MAX_KEYS),),
                         (Example({"keys": ["ctrl", "s"]}, (KeyChord(("ctrl", "s")),)),
                          Example({"keys": ["enter"]}, (KeyChord(("enter",)),)))),)),
    Word("scroll",
         ComputerAction(_read_scroll, schema.scroll,
                        "Move the pointer to coordinate, then turn the wheel.", _back_scroll),
         (_computer_form(
             "Turn the wheel at coordinate: scroll_parameters {scroll_direction "
             f"up/down/left/right, scroll_amount 1-{MAX_SCROLL} notches}}.",
             (_COORD, ActionField("scroll_parameters", "text",
                                  "{scroll_direction, scroll_amount}")),
             tuple(
                 Example({"coordinate": _XY,
                          "scroll_parameters": {"scroll_direction": d, "scroll_amount": 3}},
                         (Scroll(_P, dx=3 * dx, dy=3 * dy),))
                 for d, (dx, dy) in DIRECTIONS.items()
             )),)),
    Word("wait",
         ComputerAction(_read_wait, schema.wait, "Wait this many seconds, then look again.",
                        _back_wait),
         (_wait_form,)),
)  # fmt: skip

_COMPUTER = readers(COMPUTER)
ACTIONS = names(COMPUTER)


def action_schemas(spec: DialectSpec) -> list[dict[str, Any]]:
    """One schema per computer action, in ACTIONS order."""
    return [schema.action(w.name, w.read.properties(spec), w.read.description) for w in COMPUTER]


def _computer(item: Any, index: int, spec: DialectSpec, geo: ImageGeometry) -> ActionKind:
    where = f"actions[{index}]"
    if not isinstance(item, dict):
        raise DialectParseError(f"{where} is {brief(item)}", 'Each action is {"action": ...}.')
    kind = item.get("action")
    action = _COMPUTER.get(kind) if isinstance(kind, str) else None
    if action is None:
        raise DialectParseError(
            f"{where}.action is {brief(kind)}", "Use one of: " + ", ".join(ACTIONS) + "."
        )
    return action.read(item, where, spec, geo)


# --- the tools written back: a step's actions -> the arguments of its call -------------


def _back_navigate(acts: tuple[ActionKind, ...], geo: ImageGeometry | None) -> Fields | None:
    match acts:
        case (Navigate(url=u),):
            return {"url": u}
    for word, chord in HISTORY.items():
        if acts == (chord,):
            return {"url": word}
    return None


def _back_computer(acts: tuple[ActionKind, ...], geo: ImageGeometry | None) -> Fields | None:
    items = [_item(a, geo) for a in acts]
    if not items or len(items) > MAX_ACTIONS or any(i is None for i in items):
        return None
    return {"actions": items}


def _item(action: ActionKind, geo: ImageGeometry | None) -> Fields | None:
    for word in COMPUTER:
        fields = word.read.back(action, geo)
        if fields is not None:
            return {"action": word.name, **fields}
    return None


def _back_tabs_create(acts: tuple[ActionKind, ...], geo: ImageGeometry | None) -> Fields | None:
    match acts:
        case (KeyChord(keys=keys), Navigate(url=u)) if keys == NEW_TAB.keys:
            return {"url": u}
        case (KeyChord(keys=keys),) if keys == NEW_TAB.keys:
            return {"url": ""}
    return None


def _back_terminate(acts: tuple[ActionKind, ...], geo: ImageGeometry | None) -> Fields | None:
    match acts:
        case (Done(answer=a),):
            return {"status": "success", "answer": a}
        case (Fail(reason=r),):
            return {"status": "failure", "answer": r}
    return None


# --- the tools -----------------------------------------------------------------------------

Effect = Callable[[Mapping[str, Any], DialectSpec, ImageGeometry], CallEffect]


def _read_computer(
    arguments: Mapping[str, Any], spec: DialectSpec, geo: ImageGeometry
) -> CallEffect:
    raw = arguments.get("actions")
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_ACTIONS:
        raise DialectParseError(
            f"actions is {brief(raw)}",
            f"Give computer's actions as a list of 1 to {MAX_ACTIONS} action objects.",
        )
    return CallEffect(tuple(_computer(item, i, spec, geo) for i, item in enumerate(raw)))


def _read_navigate(
    arguments: Mapping[str, Any], spec: DialectSpec, geo: ImageGeometry
) -> CallEffect:
    url = text(arguments, "url")
    return CallEffect((HISTORY.get(url.strip().lower()) or Navigate(url.strip()),))


def _read_tabs_create(
    arguments: Mapping[str, Any], spec: DialectSpec, geo: ImageGeometry
) -> CallEffect:
    url = text(arguments, "url", required=False).strip()
    return CallEffect((NEW_TAB, Navigate(url)) if url else (NEW_TAB,))


def _read_tabs_focus(
    arguments: Mapping[str, Any], spec: DialectSpec, geo: ImageGeometry
) -> CallEffect:
    tab = number(arguments.get("tab_id"), "tab_id")
    if tab != round(tab) or not 1 <= tab <= MAX_TAB:
        raise DialectParseError(f"tab_id is {tab:g}", f"tab_id is a whole number 1 to {MAX_TAB}.")
    return CallEffect((KeyChord(("ctrl", str(int(tab)))),))


def _read_terminate(
    arguments: Mapping[str, Any], spec: DialectSpec, geo: ImageGeometry
) -> CallEffect:
    status = arguments.get("status")
    answer = text(arguments, "answer", required=False)
    if status == "success":
        return CallEffect((Done(answer),))
    if status == "failure":
        return CallEffect((Fail(answer or "the model gave up"),))
    raise DialectParseError(f"status is {brief(status)}", "status is success or failure.")


def _tool_form(summary: str, fields: tuple[ActionField, ...],
               examples: tuple[Example, ...]) -> FormMaker:  # fmt: skip
    def make(name: str, spec: DialectSpec) -> ActionForm:
        return ActionForm(name, summary, fields, examples)

    return make


# (a step's actions, its geometry) -> the arguments of the call that reads as them
# (None: not this tool).
ToolBack = Callable[[tuple[ActionKind, ...], ImageGeometry | None], Fields | None]


@dataclass(frozen=True)
class Tool:
    """What the parser runs for a tool call, what the tool does in words, its
    parameters, and the inverse of `effect` for the history (render.py; None: never
    written back). `asked_last`: the tool says what others say too (computer's
    key_press is also a ctrl+t), so the history asks it after them."""

    effect: Effect
    description: str
    parameters: Callable[[DialectSpec], dict[str, Any]]
    back: ToolBack | None = None
    asked_last: bool = False


def _computer_parameters(spec: DialectSpec) -> dict[str, Any]:
    return schema.computer(action_schemas(spec))


_URL = ActionField("url", "text", "a URL")

# The function tools' order (the request's); the prompt lists the computer's actions first.
TOOLS: tuple[Word[Tool], ...] = (
    Word("navigate",
         Tool(_read_navigate,
              'Open a URL in the browser, or go "back" or "forward" in its history.',
              schema.navigate, _back_navigate),
         (_tool_form('Open a URL; "back" and "forward" go through the history.', (_URL,),
                     (Example({"url": "https://example.com"}, (Navigate("https://example.com"),)),
                      Example({"url": "back"}, (HISTORY["back"],)))),)),
    Word("computer",
         Tool(_read_computer,
              "Use the mouse and keyboard: the actions run in order, then a new screenshot "
              "comes.", _computer_parameters, _back_computer, asked_last=True),
         tuple((w.name, make) for w in COMPUTER for _, make in w.published())),
    Word("tabs_create",
         Tool(_read_tabs_create, "Open a new browser tab, at url when one is given.",
              schema.tabs_create, _back_tabs_create),
         (_tool_form("Open a new tab (ctrl+t), then the URL when one is given.", (_URL,),
                     (Example({"url": "https://example.com"},
                              (NEW_TAB, Navigate("https://example.com"))),)),)),
    Word("tabs_focus",
         Tool(_read_tabs_focus, "Switch to browser tab tab_id, counted from 1 on the left "
              f"({MAX_TAB}: the last).", schema.tabs_focus),
         (_tool_form(f"Switch to tab tab_id (ctrl+1..ctrl+{MAX_TAB}).",
                     (ActionField("tab_id", "integer", "1 to 9", minimum=1, maximum=MAX_TAB),),
                     (Example({"tab_id": 2}, (KeyChord(("ctrl", "2")),)),)),)),
    Word("terminate",
         Tool(_read_terminate,
              "End the task: status success with the answer, or failure saying why.",
              schema.terminate, _back_terminate),
         (_tool_form("End the task: success with the answer, or failure with why.",
                     (ActionField("status", "choice", "how it ended",
                                  choices=("success", "failure")),
                      ActionField("answer", "text", "the answer, or why it failed")),
                     (Example({"status": "success", "answer": "The total is 42.10 EUR."},
                              (Done("The total is 42.10 EUR."),)),
                      Example({"status": "failure", "answer": "The site is down."},
                              (Fail("The site is down."),)))),)),
)  # fmt: skip

_TOOLS = readers(TOOLS)
_TOOL_NAMES = names(TOOLS)


def tools(spec: DialectSpec) -> tuple[FunctionTool, ...]:
    """The function tools a request carries, in TOOLS order."""
    return tuple(FunctionTool(w.name, w.read.description, w.read.parameters(spec)) for w in TOOLS)


def effect(
    name: str, arguments: Mapping[str, Any], spec: DialectSpec, geometry: ImageGeometry
) -> CallEffect:
    tool = _TOOLS.get(name)
    if tool is None:
        listed = ", ".join(_TOOL_NAMES[:-1]) + " or " + _TOOL_NAMES[-1]
        raise DialectParseError(f"unknown tool {brief(name)}", f"Use {listed}.")
    return tool.effect(arguments, spec, geometry)


def _buttons(kind: str) -> tuple[str, ...]:
    return tuple(f"{kind}.button=MOUSE_BUTTON_{b.value.upper()}" for b in MouseButton)


_MODS = tuple(m.name for m in Modifier)

GAPS = (
    Gap(("click.button=MOUSE_BUTTON_BACK", "click.button=MOUSE_BUTTON_FORWARD"),
        'no side buttons: navigate "back" / "forward" in a browser'),
    Gap(tuple(f"click.modifiers=MODIFIER_{m}" for m in _MODS),
        "no modifier held for a click (ctrl+click): a key_press shortcut instead"),
    Gap(("mouse_down", "mouse_down.point", *_buttons("mouse_down"),
         "mouse_up", "mouse_up.point", *_buttons("mouse_up")),
        "no press or release alone: left_click_drag presses, moves and releases"),
    Gap(("key_down", "key_down.key", "key_up", "key_up.key"),
        "no held key: key_press presses keys together and releases them"),
    Gap(("drag.path>2", "drag.duration_ms",
         *(b for b in _buttons("drag") if not b.endswith("_LEFT")),
         *(f"drag.modifiers=MODIFIER_{m}" for m in _MODS)),
        "left_click_drag only: the left button, from one point to another"),
    Gap(("ask_user", "ask_user.question"),
        "no question to a person: terminate with failure and the question as answer"),
)  # fmt: skip


def _write(form: ActionForm, args: Mapping[str, Any], thought: str) -> str:
    """A whole answer: the tool reply of one call (what every engine returns)."""
    from holodesk.daemon.engines.base import ToolCall
    from holodesk.daemon.engines.tool_reply import reply_text

    tool, _, action = form.name.partition(".")
    arguments: Mapping[str, Any] = {"actions": [{"action": action, **args}]} if action else args
    call = ToolCall(tool, json.dumps(arguments, ensure_ascii=False), "call_1")
    return reply_text(thought or f"Next: {form.name}.", [call])


def _signature(form: ActionForm) -> str:
    shown = ", ".join(f.name for f in form.fields)
    tool, _, action = form.name.partition(".")
    head = f"computer action {action}" if action else tool
    return f"- {head}({shown}): {form.summary}"


def action_space(spec: DialectSpec) -> ActionSpace:
    # The computer's actions first (a step is mostly one), then the other tools.
    forms = sorted(published_forms(TOOLS, spec), key=lambda f: not f.name.startswith("computer."))
    return ActionSpace(
        forms=tuple(forms),
        write=_write,
        signature=_signature,
        gaps=GAPS,
        answer_format=(
            "One native tool call per step (the request's tools; vLLM's tool-call parser "
            "or the server's tool_calls): navigate, computer, tabs_create, tabs_focus or "
            "terminate. computer takes a list of actions, run in order. Coordinates are "
            "[x, y] fractions 0-1 of the screenshot."
        ),
        notes=(
            'Each earlier step comes back as its call, and its result as a tool turn ("ok", '
            'or "error: ..."); screenshots older than the last few are dropped.',
            "Keys: the contract's names, or common aliases (esc, cmd, win, return, pgdn...).",
        ),
    )
