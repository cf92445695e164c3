"""The `nemotron-tools` family: NVIDIA's computer-use harness format for
Nemotron-family checkpoints, as native function tools (tool_dialect.py).

Facts from the harness as issue 16 states them: five tools, navigate (url, or
"back"/"forward"), computer (a list of actions such as left_click, type, key_press,
scroll with scroll_parameters {scroll_direction, scroll_amount}, left_click_drag with
start_coordinate, wait with duration), tabs_create (url), tabs_focus (tab_id),
terminate (status, answer); coordinates in [0, 1], normalised to the screenshot;
each call's result goes back as the call's output; older screenshots are dropped.
The action names beyond those (right/middle/double/triple click, mouse_move) and
every description are holodesk's own reading.

Calls and the contract actions they become:

    computer(actions)                  each action in order:
      left/right/middle_click          click with that button
      double_click, triple_click       click count 2, 3 (left)
      mouse_move(coordinate)           move
      left_click_drag(start_coordinate, coordinate)   drag along the two points
      type(text)                       type_text where the focus is
      key_press(keys)                  key_chord(keys)
      scroll(coordinate, scroll_parameters)   scroll there, +/-amount notches
      wait(duration)                   wait, seconds (at most the spec's max_wait_s)
    navigate(url)                      navigate; "back"/"forward": alt+left/right
    tabs_create(url)                   ctrl+t, then navigate (no url: the new tab)
    tabs_focus(tab_id)                 ctrl+tab_id, 1-9 (9: the last tab)
    terminate(status, answer)          done(answer) on success, fail(answer) else

What the tools cannot say is `GAPS` (the docs list it): side buttons, modifiers held
for one click, a press or release alone, a held key, a drag other than a left one
through two points, asking the person.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

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
    Gap,
)
from holodesk.daemon.dialects.base import DialectParseError
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.hdesktop_schema import key_names
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.tool_dialect import CallEffect, FunctionTool, ToolFamily
from holodesk.daemon.dialects.tool_prompt import RenderedCall
from holodesk.daemon.dialects.values import brief, key_name, number, point_value, text
from holodesk.daemon.geometry import Point

NAME = "nemotron_tools"
CLICKS: dict[str, tuple[MouseButton, int]] = {
    "left_click": (MouseButton.LEFT, 1),
    "right_click": (MouseButton.RIGHT, 1),
    "middle_click": (MouseButton.MIDDLE, 1),
    "double_click": (MouseButton.LEFT, 2),
    "triple_click": (MouseButton.LEFT, 3),
}
ACTIONS = (*CLICKS, "mouse_move", "left_click_drag", "type", "key_press", "scroll", "wait")
DIRECTIONS = {"down": (0, 1), "up": (0, -1), "right": (1, 0), "left": (-1, 0)}
MAX_ACTIONS = 10
MAX_SCROLL = 100
MAX_KEYS = 5
MAX_TAB = 9
HISTORY = {"back": KeyChord(("alt", "left")), "forward": KeyChord(("alt", "right"))}
NEW_TAB = KeyChord(("ctrl", "t"))


# --- the tools, as data ----------------------------------------------------------------


def _coordinate(what: str) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "number", "minimum": 0, "maximum": 1},
        "minItems": 2,
        "maxItems": 2,
        "description": f"{what}: [x, y], fractions 0-1 of the screenshot's width and height",
    }


def _object(
    props: dict[str, Any], required: Sequence[str], description: str = ""
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "object",
        "properties": props,
        "required": list(required),
        "additionalProperties": False,
    }
    if description:
        body["description"] = description
    return body


def _action(name: str, props: dict[str, Any], description: str) -> dict[str, Any]:
    return _object(
        {"action": {"type": "string", "const": name}, **props},
        ["action", *props],
        description,
    )


def action_schemas(spec: DialectSpec) -> list[dict[str, Any]]:
    """One schema per computer action, in ACTIONS order."""
    at = {"coordinate": _coordinate("where")}
    key = {
        "anyOf": [
            {"type": "string", "enum": key_names(spec.key_aliases)},
            {"type": "string", "minLength": 1, "maxLength": 1},
        ]
    }
    clicks = {
        "left_click": "Click the left button at coordinate.",
        "right_click": "Click the right button at coordinate.",
        "middle_click": "Click the middle button at coordinate.",
        "double_click": "Double-click at coordinate.",
        "triple_click": "Triple-click at coordinate (selects a line or paragraph).",
    }
    scroll = _object(
        {
            "scroll_direction": {"type": "string", "enum": list(DIRECTIONS)},
            "scroll_amount": {"type": "integer", "minimum": 1, "maximum": MAX_SCROLL},
        },
        ["scroll_direction", "scroll_amount"],
        "which way, and how many wheel notches",
    )
    return [
        *(_action(name, at, what) for name, what in clicks.items()),
        _action("mouse_move", at, "Move the pointer to coordinate (hover)."),
        _action(
            "left_click_drag",
            {"start_coordinate": _coordinate("where the drag starts"), **at},
            "Press the left button at start_coordinate, move to coordinate, release.",
        ),
        _action("type", {"text": {"type": "string"}}, "Type text where the keyboard focus is."),
        _action(
            "key_press",
            {"keys": {"type": "array", "items": key, "minItems": 1, "maxItems": MAX_KEYS}},
            'Press keys together, e.g. ["ctrl", "c"], or one key, e.g. ["enter"].',
        ),
        _action(
            "scroll",
            {**at, "scroll_parameters": scroll},
            "Move the pointer to coordinate, then turn the wheel.",
        ),
        _action(
            "wait",
            {"duration": {"type": "number", "minimum": 0, "maximum": spec.max_wait_s}},
            "Wait this many seconds, then look again.",
        ),
    ]


def tools(spec: DialectSpec) -> tuple[FunctionTool, ...]:
    url = {"type": "string", "minLength": 1}
    return (
        FunctionTool(
            "navigate",
            'Open a URL in the browser, or go "back" or "forward" in its history.',
            _object({"url": {**url, "description": 'a URL, "back" or "forward"'}}, ["url"]),
        ),
        FunctionTool(
            "computer",
            "Use the mouse and keyboard: the actions run in order, then a new screenshot comes.",
            _object(
                {
                    "actions": {
                        "type": "array",
                        "items": {"anyOf": action_schemas(spec)},
                        "minItems": 1,
                        "maxItems": MAX_ACTIONS,
                    }
                },
                ["actions"],
            ),
        ),
        FunctionTool(
            "tabs_create",
            "Open a new browser tab, at url when one is given.",
            _object({"url": {"type": "string"}}, ["url"]),
        ),
        FunctionTool(
            "tabs_focus",
            f"Switch to browser tab tab_id, counted from 1 on the left ({MAX_TAB}: the last).",
            _object({"tab_id": {"type": "integer", "minimum": 1, "maximum": MAX_TAB}}, ["tab_id"]),
        ),
        FunctionTool(
            "terminate",
            "End the task: status success with the answer, or failure saying why.",
            _object(
                {
                    "status": {"type": "string", "enum": ["success", "failure"]},
                    "answer": {"type": "string"},
                },
                ["status", "answer"],
            ),
        ),
    )


# --- calls -> actions -------------------------------------------------------------------


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


# --- actions -> the call (history) ------------------------------------------------------


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


# --- the action space (docs, prompt, tests) ---------------------------------------------

_P = Point(0.5, 0.3)
_Q = Point(0.7, 0.45)


def _computer_form(name: str, summary: str, fields: tuple[ActionField, ...],
                   examples: tuple[Example, ...]) -> ActionForm:  # fmt: skip
    return ActionForm(f"computer.{name}", summary, fields, examples)


def _forms(spec: DialectSpec) -> tuple[ActionForm, ...]:
    coord = ActionField("coordinate", "point", "[x, y] in 0-1")
    xy = [_P.x, _P.y]
    clicks = tuple(
        _computer_form(
            name,
            f"{name.replace('_', ' ').capitalize()} at coordinate.",
            (coord,),
            (Example({"coordinate": xy}, (Click(_P, button=b, count=c),), "The target is there."),),
        )
        for name, (b, c) in CLICKS.items()
    )
    scroll_examples = tuple(
        Example(
            {"coordinate": xy, "scroll_parameters": {"scroll_direction": d, "scroll_amount": 3}},
            (Scroll(_P, dx=3 * dx, dy=3 * dy),),
        )
        for d, (dx, dy) in DIRECTIONS.items()
    )
    keys = ActionField("keys", "keys", "keys pressed together", min_items=1, max_items=MAX_KEYS)
    computer = (
        *clicks,
        _computer_form("mouse_move", "Move the pointer to coordinate.", (coord,),
                       (Example({"coordinate": xy}, (Move(_P),)),)),
        _computer_form(
            "left_click_drag", "Drag with the left button from start_coordinate to coordinate.",
            (ActionField("start_coordinate", "point", "[x, y] in 0-1, where it starts"), coord),
            (Example({"start_coordinate": xy, "coordinate": [_Q.x, _Q.y]}, (Drag((_P, _Q)),)),),
        ),
        _computer_form("type", "Type text where the keyboard focus is.",
                       (ActionField("text", "text", "the text"),),
                       (Example({"text": "Quarterly report"}, (TypeText("Quarterly report"),)),)),
        _computer_form("key_press", "Press keys together (a shortcut, or one key).", (keys,),
                       (Example({"keys": ["ctrl", "s"]}, (KeyChord(("ctrl", "s")),)),
                        Example({"keys": ["enter"]}, (KeyChord(("enter",)),)))),
        _computer_form(
            "scroll", "Turn the wheel at coordinate: scroll_parameters {scroll_direction "
            f"up/down/left/right, scroll_amount 1-{MAX_SCROLL} notches}}.",
            (coord, ActionField("scroll_parameters", "text", "{scroll_direction, scroll_amount}")),
            scroll_examples,
        ),
        _computer_form("wait", "Wait duration seconds.",
                       (ActionField("duration", "number", "seconds", minimum=0,
                                    maximum=spec.max_wait_s),),
                       (Example({"duration": 2}, (Wait(2000),)),)),
    )  # fmt: skip
    url = ActionField("url", "text", "a URL")
    return (
        *computer,
        ActionForm(
            "navigate", 'Open a URL; "back" and "forward" go through the history.', (url,),
            (Example({"url": "https://example.com"}, (Navigate("https://example.com"),)),
             Example({"url": "back"}, (HISTORY["back"],))),
        ),
        ActionForm(
            "tabs_create", "Open a new tab (ctrl+t), then the URL when one is given.", (url,),
            (Example({"url": "https://example.com"}, (NEW_TAB, Navigate("https://example.com"))),),
        ),
        ActionForm(
            "tabs_focus", f"Switch to tab tab_id (ctrl+1..ctrl+{MAX_TAB}).",
            (ActionField("tab_id", "integer", "1 to 9", minimum=1, maximum=MAX_TAB),),
            (Example({"tab_id": 2}, (KeyChord(("ctrl", "2")),)),),
        ),
        ActionForm(
            "terminate", "End the task: success with the answer, or failure with why.",
            (ActionField("status", "choice", "how it ended", choices=("success", "failure")),
             ActionField("answer", "text", "the answer, or why it failed")),
            (Example({"status": "success", "answer": "The total is 42.10 EUR."},
                     (Done("The total is 42.10 EUR."),)),
             Example({"status": "failure", "answer": "The site is down."},
                     (Fail("The site is down."),))),
        ),
    )  # fmt: skip


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
    return ActionSpace(
        forms=_forms(spec),
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


# The family (tool_dialect.ToolFamily) of NVIDIA's computer-use harness.
FAMILY = ToolFamily(NAME, tools, effect, call_of, action_space)
