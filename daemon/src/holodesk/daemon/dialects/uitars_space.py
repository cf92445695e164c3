"""The UI-TARS text format's action space: the one description its prompt's
"## Action Space" list and its docs are drawn from, and that its parser
(uitars_actions.py) reads. There is no schema: the format is free text.

UI-TARS's own verbs (click, left_double, right_single, drag, hotkey, type,
scroll, wait, finished, call_user) plus the ones UI-TARS agents and our parser
share for the rest of the desktop (left_triple, middle_single, hover,
mouse_down/mouse_up, keydown/keyup, fail). What the family has no word for is a
`Gap`, with the sequence that does the same (docs/dialects/uitars.md).
"""

from __future__ import annotations

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
    MouseButton,
    MouseDown,
    MouseUp,
    Move,
    Scroll,
    TypeText,
    Wait,
)
from holodesk.daemon.dialects.action_space import ActionField, ActionForm, ActionSpace, Example, Gap
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.geometry import Point

_P = Point(500, 300)
_Q = Point(700, 450)
_BOX = "<|box_start|>(x1,y1)<|box_end|>"
# The buttons UI-TARS names (no side buttons: its history never invents syntax for them).
BUTTONS = (MouseButton.LEFT, MouseButton.RIGHT, MouseButton.MIDDLE)


class Box:
    """A position argument as UI-TARS writes it, from a point in model coordinates."""

    def __init__(self, point: Point) -> None:
        self.point = point

    def __str__(self) -> str:
        return f"<|box_start|>({round(self.point.x)},{round(self.point.y)})<|box_end|>"


def _at(required: bool = True, name: str = "start_box", where: str = "the target") -> ActionField:
    return ActionField(
        name,
        "point",
        f"{where}, '(x,y)' in any of UI-TARS's position spellings",
        required=required,
        placeholder=_BOX if name == "start_box" else _BOX.replace("1", "3"),
        default="" if required else "where the pointer is",
    )


def _button() -> ActionField:
    return ActionField(
        "button",
        "choice",
        "the mouse button",
        required=False,
        choices=tuple(b.value for b in BUTTONS),
        default="left",
        placeholder="left",
    )


def _key(name: str = "key", what: str = "one key name") -> ActionField:
    return ActionField(name, "key", what, placeholder="")


def _clicks() -> tuple[ActionForm, ...]:
    forms = []
    for name, summary, click in (
        ("click", "left click", Click(_P)),
        ("left_double", "double-click", Click(_P, count=2)),
        ("left_triple", "triple-click (selects a line)", Click(_P, count=3)),
        ("right_single", "right click (context menu)", Click(_P, MouseButton.RIGHT)),
        (
            "middle_single",
            "middle click (open in a new tab, paste on X11)",
            Click(_P, MouseButton.MIDDLE),
        ),
    ):
        forms.append(
            ActionForm(
                name,
                summary[0].upper() + summary[1:] + ".",
                (_at(),),
                (Example({"start_box": Box(_P)}, (click,), f"I {summary} the Save button."),),
            )
        )
    return tuple(forms)


def _pointer(spec: DialectSpec) -> tuple[ActionForm, ...]:
    hover = ActionForm(
        "hover",
        "Move the pointer there without clicking.",
        (_at(),),
        (Example({"start_box": Box(_P)}, (Move(_P),)),),
    )
    down, up = (
        ActionForm(
            name,
            summary,
            (_at(required=False), _button()),
            (
                Example({"start_box": Box(_P), "button": "left"}, (kind(MouseButton.LEFT, _P),)),
                *(Example({"button": b.value}, (kind(b),)) for b in BUTTONS),
            ),
        )
        for name, summary, kind in (
            (
                "mouse_down",
                "Press a mouse button and hold it (press-and-hold, or a drag "
                "step by step with hover and mouse_up).",
                MouseDown,
            ),
            ("mouse_up", "Release the button pressed with mouse_down.", MouseUp),
        )
    )
    drag = ActionForm(
        "drag",
        "Press at start_box, move to end_box, release (left button).",
        (_at(), _at(name="end_box", where="where to release")),
        (Example({"start_box": Box(_P), "end_box": Box(_Q)}, (Drag((_P, _Q)),)),),
    )
    notches = spec.scroll_notches
    scroll = ActionForm(
        "scroll",
        f"Turn the wheel {notches} notches at start_box.",
        (
            _at(required=False, where="where the wheel turns"),
            ActionField(
                "direction",
                "choice",
                "which way",
                choices=("down", "up", "right", "left"),
                placeholder="down or up or right or left",
            ),
        ),
        tuple(
            Example({"start_box": Box(_P), "direction": d}, (Scroll(_P, dx=dx, dy=dy),))
            for d, dx, dy in (
                ("down", 0, notches),
                ("up", 0, -notches),
                ("right", notches, 0),
                ("left", -notches, 0),
            )
        ),
    )
    return hover, down, up, drag, scroll


def _keyboard() -> tuple[ActionForm, ...]:
    hotkey = ActionForm(
        "hotkey",
        "Press keys together: lower-case key names separated by spaces.",
        (_key(what="the keys, e.g. 'ctrl c'"),),
        (Example({"key": "ctrl shift t"}, (KeyChord(("ctrl", "shift", "t")),)),),
    )
    keydown = ActionForm(
        "keydown",
        "Press a key and hold it (release it with keyup).",
        (_key(),),
        (Example({"key": "shift"}, (KeyDown("shift"),)),),
    )
    keyup = ActionForm(
        "keyup",
        "Release a key held with keydown.",
        (_key(),),
        (Example({"key": "shift"}, (KeyUp("shift"),)),),
    )
    type_ = ActionForm(
        "type",
        "Type where the caret is; escape \\', \\\" and \\n inside content; end with "
        "\\n to submit (press Enter).",
        (ActionField("content", "text", "the text, any Unicode", placeholder=""),),
        (
            Example({"content": "héllo wörld ✓"}, (TypeText("héllo wörld ✓"),)),
            Example(
                {"content": "weather in Paris\n"},
                (TypeText("weather in Paris"), KeyChord(("enter",))),
            ),
        ),
    )
    return hotkey, keydown, keyup, type_


def _control(spec: DialectSpec) -> tuple[ActionForm, ...]:
    wait = ActionForm(
        "wait",
        f"Pause for {spec.default_wait_s:g} seconds, then look at the screen again.",
        (),
        (Example({}, (Wait(round(spec.default_wait_s * 1000)),)),),
    )
    finished = ActionForm(
        "finished",
        "The task is done; content is the answer, escaped like type.",
        (ActionField("content", "text", "the answer", placeholder="xxx"),),
        (Example({"content": "The total is 42.10 EUR."}, (Done("The total is 42.10 EUR."),)),),
    )
    call_user = ActionForm(
        "call_user",
        "Hand over to the user: the task cannot go on without them (the "
        "Thought says what is needed).",
        (),
        (Example({}, (AskUser("I need the 2FA code."),), thought="I need the 2FA code."),),
    )
    fail = ActionForm(
        "fail",
        "The task cannot be done; reason says why.",
        (ActionField("reason", "text", "why", placeholder=""),),
        (Example({"reason": "The file does not exist."}, (Fail("The file does not exist."),)),),
    )
    return wait, finished, call_user, fail


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return f"'{escaped}'"


def _call(form: ActionForm, args: Mapping[str, Any]) -> str:
    return f"{form.name}(" + ", ".join(f"{k}={_quote(str(v))}" for k, v in args.items()) + ")"


def _write(form: ActionForm, args: Mapping[str, Any], thought: str) -> str:
    """A whole UI-TARS answer: a Thought line, then the Action line."""
    return f"Thought: {thought or f'Next: {form.name}.'}\nAction: {_call(form, args)}"


def _signature(form: ActionForm) -> str:
    shown = ", ".join(f"{f.name}='{f.placeholder}'" for f in form.fields)
    return f"{form.name}({shown})  # {form.summary}"


_SIDE_BUTTONS = ("MOUSE_BUTTON_BACK", "MOUSE_BUTTON_FORWARD")
_MODIFIERS = ("MODIFIER_CTRL", "MODIFIER_SHIFT", "MODIFIER_ALT", "MODIFIER_META")

GAPS = (
    Gap(
        tuple(f"{k}.modifiers={m}" for k in ("click", "drag") for m in _MODIFIERS),
        "No held modifiers on a click or drag: keydown(key='ctrl'), then the click, then "
        "keyup(key='ctrl').",
    ),
    Gap(
        tuple(
            f"{k}.button={b}"
            for k in ("click", "mouse_down", "mouse_up", "drag")
            for b in _SIDE_BUTTONS
        ),
        "No side (back/forward) buttons: the browser keys do the same, "
        "hotkey(key='browser_back') or hotkey(key='browser_forward').",
    ),
    Gap(
        (
            "drag.button=MOUSE_BUTTON_RIGHT",
            "drag.button=MOUSE_BUTTON_MIDDLE",
            "drag.path>2",
            "drag.duration_ms",
        ),
        "drag is a straight left-button move at the client's pace: for another button, a "
        "path or a slow drag, mouse_down(button=...), hover(...) through each point, "
        "mouse_up(button=...).",
    ),
    Gap(
        ("navigate", "navigate.url"),
        "No address verb: hotkey(key='ctrl l'), then type(content='https://...\\n').",
    ),
)


def uitars_action_space(spec: DialectSpec) -> ActionSpace:
    return ActionSpace(
        forms=(*_clicks(), *_pointer(spec), *_keyboard(), *_control(spec)),
        write=_write,
        signature=_signature,
        gaps=GAPS,
        answer_format=(
            "Free text: a line 'Thought: <reasoning>', then 'Action: <call>'; several calls "
            "are separated by blank lines. Arguments are quoted with Python escapes."
        ),
        notes=(
            "Positions may be written '(x,y)', '<|box_start|>(x,y)<|box_end|>', "
            "'<point>x y</point>' or as a box '(x1,y1,x2,y2)' whose centre is meant.",
            "Without start_box, scroll turns the wheel at the centre of the screen and "
            "mouse_down/mouse_up act where the pointer is.",
            "The parser also reads the names UI-TARS agents use besides these (left_single, "
            "select, move_to, press, release, ...).",
        ),
    )
