"""The Holo answer format's action space: the one description its schema
(holo_schema.py), its prompt's action list and its docs are drawn from, and that
its parser (holo_actions.py) reads.

The cookbook verbs (click_element, write_element_abs, scroll, hotkey, wait,
answer, goto, go_back, refresh) keep their fields; the desktop ones reach the
rest of the contract: any button, 1-3 clicks and held modifiers on
click_element, write (typing where the caret is, no click first), scroll by an
amount at a point, mouse_down / mouse_up, move, drag along a path with a button,
modifiers and a duration, key_down / key_up, fail and ask_user.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from holodesk.daemon.actions import (
    AskUser,
    Click,
    Done,
    Drag,
    Fail,
    KeyChord,
    KeyDown,
    KeyUp,
    Modifier,
    MouseButton,
    MouseDown,
    MouseUp,
    Move,
    Navigate,
    Scroll,
    TypeText,
    Wait,
)
from holodesk.daemon.dialects.action_space import ActionField, ActionForm, ActionSpace, Example
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.geometry import Point

_BUTTONS = tuple(b.value for b in MouseButton)
_MODIFIERS = tuple(m.value for m in Modifier)
MAX_PATH_POINTS = 64
MAX_CHORD_KEYS = 8
MAX_DRAG_MS = 60_000
MAX_SCROLL_NOTCHES = 100

_P = Point(500, 300)
_Q = Point(700, 450)


def _point(required: bool = True, what: str = "the target") -> ActionField:
    return ActionField(
        "x, y",
        "point",
        f"{what}, as x and y",
        required=required,
        default="the centre of the screen" if not required else "",
    )


def _element() -> ActionField:
    return ActionField(
        "element", "text", "what the target is, in a few words", required=False, default='""'
    )


def _button(default: str = "left") -> ActionField:
    return ActionField(
        "button",
        "choice",
        "the mouse button (back and forward: the side buttons)",
        required=False,
        choices=_BUTTONS,
        default=default,
    )


def _modifiers(during: str) -> ActionField:
    return ActionField(
        "modifiers",
        "modifiers",
        f"keys held down during the {during}",
        required=False,
        choices=_MODIFIERS,
        max_items=len(_MODIFIERS) * 2,
        default="none",
    )


def _xy(point: Point) -> dict[str, int]:
    return {"x": round(point.x), "y": round(point.y)}


def _key() -> ActionField:
    return ActionField("key", "key", "one key name (see keys below)")


def _click_forms() -> tuple[ActionForm, ...]:
    element = {"element": "Save button"}
    click = ActionForm(
        "click_element",
        "Click at x, y: any button, 1-3 times, optionally holding modifier keys.",
        (
            _point(),
            _element(),
            _button(),
            ActionField(
                "count",
                "integer",
                "clicks: 2 double-clicks, 3 triple-clicks (selects a line)",
                required=False,
                minimum=1,
                maximum=3,
                default="1",
            ),
            _modifiers("click"),
        ),
        (
            Example({**_xy(_P), **element}, (Click(_P),), "The Save button is at the top."),
            Example(
                {**_xy(_P), "button": "middle", "count": 3, "modifiers": list(_MODIFIERS)},
                (Click(_P, MouseButton.MIDDLE, 3, tuple(Modifier)),),
            ),
            Example({**_xy(_P), "count": 2}, (Click(_P, count=2),)),
            *(
                Example({**_xy(_P), "button": b.value}, (Click(_P, b),))
                for b in MouseButton
                if b is not MouseButton.LEFT
            ),
        ),
    )
    double = ActionForm(
        "double_click",
        "Double-click with the left button at x, y.",
        (_point(), _element()),
        (Example({**_xy(_P), "element": "report.pdf"}, (Click(_P, count=2),)),),
    )
    right = ActionForm(
        "right_click",
        "Right-click at x, y (opens a context menu).",
        (_point(), _element()),
        (Example({**_xy(_P), "element": "report.pdf"}, (Click(_P, MouseButton.RIGHT),)),),
    )
    return click, double, right


def _pointer_forms() -> tuple[ActionForm, ...]:
    move = ActionForm(
        "move",
        "Move the pointer to x, y without clicking (hover).",
        (_point(),),
        (Example(_xy(_P), (Move(_P),)),),
    )
    down, up = (
        ActionForm(
            name,
            f"{what} (at x, y when given, else where the pointer is).",
            (_button(), _point(required=False, what="where to move first")),
            (
                Example({"button": "left", **_xy(_P)}, (kind(MouseButton.LEFT, _P),)),
                Example({"button": "left"}, (kind(MouseButton.LEFT),)),
                *(Example({"button": b.value}, (kind(b),)) for b in MouseButton),
            ),
        )
        for name, what, kind in (
            (
                "mouse_down",
                "Press a mouse button and hold it: a press-and-hold, or a drag step by step",
                MouseDown,
            ),
            ("mouse_up", "Release a mouse button pressed with mouse_down", MouseUp),
        )
    )
    path = (_P, Point(600, 300), _Q)
    drag = ActionForm(
        "drag",
        "Press at the first point of path, move through the others, release at the last.",
        (
            ActionField(
                "path",
                "path",
                f"2 to {MAX_PATH_POINTS} points, each {{x, y}}",
                min_items=2,
                max_items=MAX_PATH_POINTS,
            ),
            _button(),
            _modifiers("drag"),
            ActionField(
                "duration_ms",
                "integer",
                "how long the move along the path takes, in ms",
                required=False,
                minimum=0,
                maximum=MAX_DRAG_MS,
                default="the client's choice",
            ),
        ),
        (
            Example({"path": [_xy(_P), _xy(_Q)]}, (Drag((_P, _Q)),), "Move the file to Archive."),
            Example(
                {"path": [_xy(p) for p in path], "modifiers": list(_MODIFIERS), "duration_ms": 800},
                (Drag(path, modifiers=tuple(Modifier), duration_ms=800),),
            ),
            *(
                Example({"path": [_xy(_P), _xy(_Q)], "button": b.value}, (Drag((_P, _Q), b),))
                for b in MouseButton
            ),
        ),
    )
    scroll = ActionForm(
        "scroll",
        "Turn the mouse wheel: amount notches in direction, at x, y when given.",
        (
            ActionField(
                "direction", "choice", "which way", choices=("up", "down", "left", "right")
            ),
            ActionField(
                "amount",
                "integer",
                "wheel notches",
                required=False,
                minimum=1,
                maximum=MAX_SCROLL_NOTCHES,
                default="5 (the dialect's scroll_notches)",
            ),
            _point(required=False, what="where the wheel turns"),
        ),
        (
            Example({"direction": "down", "amount": 3, **_xy(_P)}, (Scroll(_P, dy=3),)),
            Example({"direction": "up", "amount": 2, **_xy(_P)}, (Scroll(_P, dy=-2),)),
            Example({"direction": "right", "amount": 4, **_xy(_P)}, (Scroll(_P, dx=4),)),
            Example({"direction": "left", "amount": 1, **_xy(_P)}, (Scroll(_P, dx=-1),)),
        ),
    )
    return move, down, up, drag, scroll


def _keyboard_forms() -> tuple[ActionForm, ...]:
    content = ActionField("content", "text", "the text to type, any Unicode", min_items=1)
    write_at = ActionForm(
        "write_element_abs",
        "Click the field at x, y, then type content into it.",
        (content, _point(what="the field"), _element()),
        (
            Example(
                {"content": "Paris", **_xy(_P), "element": "Search field"},
                (Click(_P), TypeText("Paris")),
            ),
        ),
    )
    write = ActionForm(
        "write",
        "Type content where the keyboard focus (the caret) already is; no click.",
        (content,),
        (Example({"content": "héllo wörld ✓"}, (TypeText("héllo wörld ✓"),)),),
    )
    hotkey = ActionForm(
        "hotkey",
        'Press keys together and release them, e.g. ["ctrl", "c"].',
        (
            ActionField(
                "keys", "keys", "the chord, modifiers first", min_items=1, max_items=MAX_CHORD_KEYS
            ),
        ),
        (Example({"keys": ["ctrl", "shift", "t"]}, (KeyChord(("ctrl", "shift", "t")),)),),
    )
    key_down = ActionForm(
        "key_down",
        "Press a key and keep it down (release it later with key_up).",
        (_key(),),
        (Example({"key": "shift"}, (KeyDown("shift"),)),),
    )
    key_up = ActionForm(
        "key_up",
        "Release a key pressed with key_down.",
        (_key(),),
        (Example({"key": "shift"}, (KeyUp("shift"),)),),
    )
    return write_at, write, hotkey, key_down, key_up


def _control_forms(spec: DialectSpec) -> tuple[ActionForm, ...]:
    wait = ActionForm(
        "wait",
        "Wait, then look at the screen again.",
        (
            ActionField(
                "seconds",
                "integer",
                "how long",
                required=False,
                minimum=0,
                maximum=int(spec.max_wait_s),
                default=f"{spec.default_wait_s:g}",
            ),
        ),
        (Example({"seconds": 3}, (Wait(3000),)),),
    )
    goto = ActionForm(
        "goto",
        "Open a web address in the browser.",
        (ActionField("url", "text", "the address (no spaces)", pattern=r"^\S+$"),),
        (Example({"url": "https://example.org/"}, (Navigate("https://example.org/"),)),),
    )
    back = ActionForm(
        "go_back",
        "Go back one page in the browser (alt+left).",
        (),
        (Example({}, (KeyChord(("alt", "left")),)),),
    )
    refresh = ActionForm(
        "refresh", "Reload the page (f5).", (), (Example({}, (KeyChord(("f5",)),)),)
    )
    answer = ActionForm(
        "answer",
        "The task is done; content is the full answer.",
        (ActionField("content", "text", "the answer"),),
        (
            Example(
                {"content": "The invoice total is 42.10 EUR."},
                (Done("The invoice total is 42.10 EUR."),),
            ),
        ),
    )
    fail = ActionForm(
        "fail",
        "The task cannot be done; reason says why.",
        (ActionField("reason", "text", "why"),),
        (Example({"reason": "The file does not exist."}, (Fail("The file does not exist."),)),),
    )
    ask = ActionForm(
        "ask_user",
        "Only a human can continue: ask them.",
        (ActionField("question", "text", "the question shown to the user"),),
        (Example({"question": "What is the 2FA code?"}, (AskUser("What is the 2FA code?"),)),),
    )
    return wait, goto, back, refresh, answer, fail, ask


def _write(form: ActionForm, args: Mapping[str, Any], thought: str) -> str:
    """A whole Holo answer: one JSON object {note, thought, action}."""
    step = {
        "note": "",
        "thought": thought or f"Next: {form.name}.",
        "action": {"action": form.name, **args},
    }
    return json.dumps(step, ensure_ascii=False)


def _signature(form: ActionForm) -> str:
    shown: list[str] = []
    for f in form.fields:
        names = ["x", "y"] if f.kind == "point" else [f.name]
        shown.extend(n if f.required else f"{n}?" for n in names)
    return f"- {form.name}({', '.join(shown)}): {form.summary}"


def holo_action_space(spec: DialectSpec) -> ActionSpace:
    return ActionSpace(
        forms=(
            *_click_forms(),
            *_keyboard_forms(),
            *_pointer_forms(),
            *_control_forms(spec),
        ),
        write=_write,
        signature=_signature,
        answer_format=(
            'One JSON object {"note": str, "thought": str, "action": {"action": <name>, '
            "<fields>}}; note is optional. A point is two fields, x and y. Optional fields "
            "(marked ?) may be left out."
        ),
        notes=(
            "x and y are both given or both left out.",
            'The parser also reads a list "actions" of up to 16 action objects, and '
            "common aliases (click, left_click, type, key, press, hover, done, ...); "
            "the schema and the prompt offer only the forms listed here.",
        ),
    )
