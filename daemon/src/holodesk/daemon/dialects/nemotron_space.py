"""The `nemotron-tools` family's action space: its forms with examples, the GAPS
(what the five tools cannot say), and how one answer is written as a tool reply.

Kept apart from the specs and the readers because only the docs, the prompt text
and the tests use it (tool_dialect.ToolFamily.action_space); none of it runs while
a step is parsed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from holodesk.daemon.actions import (
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
from holodesk.daemon.dialects.action_space import ActionField, ActionForm, ActionSpace, Example, Gap
from holodesk.daemon.dialects.nemotron_schema import (
    CLICKS,
    DIRECTIONS,
    HISTORY,
    MAX_KEYS,
    MAX_SCROLL,
    MAX_TAB,
    NEW_TAB,
)
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.geometry import Point

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
