"""The `hdesktop` action space (dialects/action_space.py): H Company's twelve desktop
tools as data, with worked examples, and the contract options the format has no
word for (its gaps) with what a model does instead.

The schema (hdesktop_schema) and the parser (hdesktop_tools) are written against
the same tools; tests parse every example here and check that the examples and the
gaps together cover action.proto.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from holodesk.daemon.actions import (
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
from holodesk.daemon.dialects import hdesktop_schema as schema
from holodesk.daemon.dialects.action_space import (
    ActionField,
    ActionForm,
    ActionSpace,
    Example,
    Gap,
)
from holodesk.daemon.dialects.hdesktop_tools import DELETE, ENTER, SELECT_ALL
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.geometry import Point

_P = Point(500, 300)
_Q = Point(700, 450)
_BUTTONS = tuple(b.value for b in MouseButton)


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


def _pointer_forms() -> tuple[ActionForm, ...]:
    el = {"element": "the Save button"}
    click = ActionForm(
        "click_desktop",
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
    double = ActionForm(
        "double_click_desktop",
        "Double-click at (x, y) with the left button.",
        _at("the element to double-click"),
        (Example({"element": "report.pdf", **_xy(_P)}, (Click(_P, count=2),)),),
    )
    move = ActionForm(
        "move_to_desktop",
        "Move the pointer to (x, y) without clicking (hover; where a drag starts).",
        _at("the element to point at"),
        (Example({"element": "the card", **_xy(_P)}, (Move(_P),)),),
    )
    drag = ActionForm(
        "drag_to_desktop",
        "Press the left button where the pointer is now, move to (x, y), release; "
        "move_to_desktop first sets where the drag starts.",
        _at("where the drag ends"),
        (
            Example(
                {"element": "the Done column", **_xy(_Q)},
                (MouseDown(MouseButton.LEFT), MouseUp(MouseButton.LEFT, _Q)),
            ),
        ),
    )
    scroll = ActionForm(
        "scroll_desktop",
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
    return click, double, move, drag, scroll


def _keyboard_forms() -> tuple[ActionForm, ...]:
    write = ActionForm(
        "write_desktop",
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
    hotkey = ActionForm(
        "hotkey_desktop",
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
    hold = ActionForm(
        "hold_and_tap_key_desktop",
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
    down = ActionForm(
        "key_down_desktop",
        "Press a key and keep it down (across clicks); release it with key_up_desktop.",
        (_key("key", "the key to press"),),
        (Example({"key": "shift"}, (KeyDown("shift"),)),),
    )
    up = ActionForm(
        "key_up_desktop",
        "Release a key pressed with key_down_desktop.",
        (_key("key", "the key to release"),),
        (Example({"key": "shift"}, (KeyUp("shift"),)),),
    )
    return write, hotkey, hold, down, up


def _control_forms() -> tuple[ActionForm, ...]:
    plan = ActionForm(
        "update_plan",
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
    answer = ActionForm(
        "answer",
        "End the task with the complete final answer.",
        (ActionField("content", "text", "the answer"),),
        (Example({"content": "The total is 42.10 EUR."}, (Done("The total is 42.10 EUR."),)),),
    )
    return plan, answer


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


def _write(form: ActionForm, args: Mapping[str, Any], thought: str) -> str:
    """A whole answer: one JSON object {note, thought, tool_call}."""
    step = {
        "note": None,
        "thought": thought or f"Next: {form.name}.",
        "tool_call": {"tool_name": form.name, **args},
    }
    return json.dumps(step, ensure_ascii=False)


def _signature(form: ActionForm) -> str:
    shown: list[str] = []
    for f in form.fields:
        names = ["x", "y"] if f.kind == "point" else [f.name]
        shown.extend(n if f.required else f"{n}={f.default}" for n in names)
    return f"- {form.name}({', '.join(shown)}): {form.summary}"


def hdesktop_action_space(spec: DialectSpec) -> ActionSpace:
    forms = (*_pointer_forms(), *_keyboard_forms(), *_control_forms())
    return ActionSpace(
        # In the schema's order (hdesktop_schema.TOOL_NAMES), the harness's own.
        forms=tuple(sorted(forms, key=lambda f: schema.TOOL_NAMES.index(f.name))),
        write=_write,
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
