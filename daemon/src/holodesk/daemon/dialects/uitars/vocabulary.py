"""The UI-TARS text format's vocabulary, said once: every name its parser reads, the
reader it runs (a call -> contract actions in frame pixels), the form its prompt's
"## Action Space" list and its docs publish for it, and the other names UI-TARS
agents write for it (left_single, select, move_to, release, ...). There is no
schema: the format is free text.

UI-TARS's own verbs (click, left_double, right_single, drag, hotkey, type,
scroll, wait, finished, call_user) plus the ones UI-TARS agents and our parser
share for the rest of the desktop (left_triple, middle_single, hover,
mouse_down/mouse_up, keydown/keyup, fail). What the family has no word for is a
`Gap`, with the sequence that does the same (docs/dialects/uitars.md).

Coordinates come as boxes in any of the forms UI-TARS writes: '(x,y)',
'(x1,y1,x2,y2)', '[x1,y1,x2,y2]', '<|box_start|>(x,y)<|box_end|>',
'<point>x y</point>', '<bbox>x1 y1 x2 y2</bbox>'; a box means its centre.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# Alike in every family's vocabulary (the contract's kinds, the shared core's parts),
# as its readers and examples build the same actions: imports, not repeated logic.
from holodesk.daemon.actions import (
    ActionKind,
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
from holodesk.daemon.dialects.action_space import (
    ActionField,
    ActionForm,
    ActionSpace,
    Example,
    FormMaker,
    Gap,
    Word,
    key_form,
    published_forms,
)
from holodesk.daemon.dialects.base import DialectParseError, LocatedTarget
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.uitars.calls import Call
from holodesk.daemon.dialects.uitars.render import quote
from holodesk.daemon.dialects.values import (
    brief,
    key_list,
    key_name,
    model_box,
    model_point,
    number,
)
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


# --- the forms' fields -------------------------------------------------------------------


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


# --- the forms ---------------------------------------------------------------------------


def _click_form(summary: str, click: Click) -> FormMaker:
    """click, left_double, left_triple, right_single, middle_single."""

    def make(name: str, spec: DialectSpec) -> ActionForm:
        example = Example({"start_box": Box(_P)}, (click,), f"I {summary} the Save button.")
        return ActionForm(name, summary[0].upper() + summary[1:] + ".", (_at(),), (example,))

    return make


def _hover(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "Move the pointer there without clicking.",
        (_at(),),
        (Example({"start_box": Box(_P)}, (Move(_P),)),),
    )


def _press_form(summary: str, kind: type[MouseDown] | type[MouseUp]) -> FormMaker:
    """mouse_down and mouse_up: a button pressed or released, at start_box when given."""

    def make(name: str, spec: DialectSpec) -> ActionForm:
        return ActionForm(
            name,
            summary,
            (_at(required=False), _button()),
            (
                Example({"start_box": Box(_P), "button": "left"}, (kind(MouseButton.LEFT, _P),)),
                *(Example({"button": b.value}, (kind(b),)) for b in BUTTONS),
            ),
        )

    return make


def _drag(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "Press at start_box, move to end_box, release (left button).",
        (_at(), _at(name="end_box", where="where to release")),
        (Example({"start_box": Box(_P), "end_box": Box(_Q)}, (Drag((_P, _Q)),)),),
    )


def _scroll(name: str, spec: DialectSpec) -> ActionForm:
    notches = spec.scroll_notches
    return ActionForm(
        name,
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


def _hotkey(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "Press keys together: lower-case key names separated by spaces.",
        (_key(what="the keys, e.g. 'ctrl c'"),),
        (Example({"key": "ctrl shift t"}, (KeyChord(("ctrl", "shift", "t")),)),),
    )


def _type(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
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


def _wait(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        f"Pause for {spec.default_wait_s:g} seconds, then look at the screen again.",
        (),
        (Example({}, (Wait(round(spec.default_wait_s * 1000)),)),),
    )


def _finished(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "The task is done; content is the answer, escaped like type.",
        (ActionField("content", "text", "the answer", placeholder="xxx"),),
        (Example({"content": "The total is 42.10 EUR."}, (Done("The total is 42.10 EUR."),)),),
    )


def _call_user(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "Hand over to the user: the task cannot go on without them (the "
        "Thought says what is needed).",
        (),
        (Example({}, (AskUser("I need the 2FA code."),), thought="I need the 2FA code."),),
    )


def _fail(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "The task cannot be done; reason says why.",
        (ActionField("reason", "text", "why", placeholder=""),),
        (Example({"reason": "The file does not exist."}, (Fail("The file does not exist."),)),),
    )


# --- the readers -------------------------------------------------------------------------


_BOX_HINT = "Give positions as start_box='(x,y)'."
_BOX_TOKENS = re.compile(r"<\|box_start\|>|<\|box_end\|>|</?point>|</?bbox>")
_BOX_SPLIT = re.compile(r"[\s,()\[\]]+")
_MAX_BOX_CHARS = 200
_POSITION_ARGS = ("start_box", "point", "start_point", "box")
# Numbers as float() reads them, nan and inf included (rejected later, with their name).
_NUMBER = re.compile(
    r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?|nan|inf(?:inity)?)", re.I
)


@dataclass(frozen=True)
class Context:
    spec: DialectSpec
    geometry: ImageGeometry
    # The step's thought: call_user() takes no question, the thought says what is needed.
    thought: str


Handler = Callable[[Call, Context], list[ActionKind]]


def box_target(raw: str, geometry: ImageGeometry, name: str = "start_box") -> LocatedTarget:
    """A point, or a box and its centre, in frame pixels; every corner must be in the
    image and a box's corners in order (top-left first)."""
    if len(raw) > _MAX_BOX_CHARS:
        raise DialectParseError(f"{name} is {brief(raw)}, not a position", _BOX_HINT)
    parts = [p for p in _BOX_SPLIT.split(_BOX_TOKENS.sub(" ", raw)) if p]
    if len(parts) not in (2, 4) or not all(_NUMBER.fullmatch(p) for p in parts):
        raise DialectParseError(f"{name} is {brief(raw)}, not a point or a box", _BOX_HINT)
    values = [number(p, name) for p in parts]
    if len(values) == 2:
        return LocatedTarget(model_point(values[0], values[1], geometry))
    box = model_box(values, geometry, name)
    return LocatedTarget(box.center, box)


def box_point(raw: str, geometry: ImageGeometry, name: str = "start_box") -> Point:
    """A point or a box's centre, in frame pixels."""
    return box_target(raw, geometry, name).point


def position_arg(call: Call) -> str | None:
    """The call's raw position (start_box and its spellings), if it has one."""
    return call.arg(*_POSITION_ARGS, position=0)


def _point(call: Call, ctx: Context, *, required: bool = True) -> Point | None:
    raw = position_arg(call)
    if raw is None:
        if required:
            raise DialectParseError(f"{call.name}() needs a position", _BOX_HINT)
        return None
    return box_point(raw, ctx.geometry)


def _required_point(call: Call, ctx: Context) -> Point:
    point = _point(call, ctx)
    assert point is not None  # required=True raises instead
    return point


_BUTTONS = {b.value: b for b in BUTTONS}


def _read_button(call: Call, default: MouseButton = MouseButton.LEFT) -> MouseButton:
    raw = call.arg("button")
    if raw is None:
        return default
    button = _BUTTONS.get(raw.strip().lower())
    if button is None:
        raise DialectParseError(
            f"button is {brief(raw)}", "Use button='left', 'right' or 'middle'."
        )
    return button


def _clicker(count: int, button: MouseButton) -> Handler:
    def handle(call: Call, ctx: Context) -> list[ActionKind]:
        return [Click(_required_point(call, ctx), button=_read_button(call, button), count=count)]

    return handle


def _read_hover(call: Call, ctx: Context) -> list[ActionKind]:
    return [Move(_required_point(call, ctx))]


def _read_mouse_down(call: Call, ctx: Context) -> list[ActionKind]:
    return [MouseDown(_read_button(call), _point(call, ctx, required=False))]


def _read_mouse_up(call: Call, ctx: Context) -> list[ActionKind]:
    return [MouseUp(_read_button(call), _point(call, ctx, required=False))]


def _read_drag(call: Call, ctx: Context) -> list[ActionKind]:
    start = call.arg("start_box", "start_point", position=0)
    end = call.arg("end_box", "end_point", position=1)
    if start is None or end is None:
        raise DialectParseError(
            f"{call.name}() needs start_box and end_box",
            "Write drag(start_box='(x1,y1)', end_box='(x2,y2)').",
        )
    path = (box_point(start, ctx.geometry), box_point(end, ctx.geometry, "end_box"))
    return [Drag(path=path)]


def _keys_arg(call: Call) -> str:
    raw = call.arg("key", "hotkey", "keys", "press", position=0)
    if raw is None:
        raise DialectParseError(f"{call.name}() has no key", "Write hotkey(key='ctrl c').")
    return raw


def _read_hotkey(call: Call, ctx: Context) -> list[ActionKind]:
    # "ctrl c": UI-TARS separates keys with spaces (key_list also takes "ctrl+c").
    return [KeyChord(key_list(_keys_arg(call), ctx.spec.key_aliases))]


def _read_key_down(call: Call, ctx: Context) -> list[ActionKind]:
    return [KeyDown(key_name(_keys_arg(call).strip() or " ", ctx.spec.key_aliases))]


def _read_key_up(call: Call, ctx: Context) -> list[ActionKind]:
    return [KeyUp(key_name(_keys_arg(call).strip() or " ", ctx.spec.key_aliases))]


def _read_type(call: Call, ctx: Context) -> list[ActionKind]:
    content = call.arg("content", "text", position=0)
    if content is None or content == "":
        raise DialectParseError(
            "type() has no content", "Write type(content='...'); end it with \\n to submit."
        )
    # A trailing \n means "then press Enter", as in the reference agent.
    text = content.rstrip("\n")
    out: list[ActionKind] = [TypeText(text)] if text else []
    if text != content:
        out.append(KeyChord(("enter",)))
    return out


_SCROLL = {"down": (0, 1), "up": (0, -1), "right": (1, 0), "left": (-1, 0)}


def _read_scroll(call: Call, ctx: Context) -> list[ActionKind]:
    raw = call.arg("direction", position=1) or "down"
    direction = raw.strip().lower()
    if direction not in _SCROLL:
        raise DialectParseError(
            f"direction is {brief(raw)}", "Write direction='down', 'up', 'left' or 'right'."
        )
    point = _point(call, ctx, required=False)
    if point is None:
        point = Point(ctx.geometry.frame.width / 2, ctx.geometry.frame.height / 2)
    dx, dy = _SCROLL[direction]
    notches = ctx.spec.scroll_notches
    return [Scroll(point=point, dx=dx * notches, dy=dy * notches)]


def _read_wait(call: Call, ctx: Context) -> list[ActionKind]:
    raw = call.arg("seconds", "time", position=0)
    seconds = ctx.spec.default_wait_s if raw is None else number(raw, "seconds")
    if seconds < 0:
        raise DialectParseError(f"seconds is {seconds:g}", "Write wait().")
    return [Wait(round(min(seconds, ctx.spec.max_wait_s) * 1000))]


def _read_finished(call: Call, ctx: Context) -> list[ActionKind]:
    return [Done(call.arg("content", "answer", position=0) or "")]


def _read_call_user(call: Call, ctx: Context) -> list[ActionKind]:
    question = call.arg("content", "question", position=0) or ctx.thought
    return [AskUser(question or "The agent needs your help to continue.")]


def _read_fail(call: Call, ctx: Context) -> list[ActionKind]:
    return [Fail(call.arg("reason", "content", position=0) or ctx.thought or "the model gave up")]


# --- the vocabulary ------------------------------------------------------------------------

_KEY_DOWN = "Press a key and hold it (release it with keyup)."
_KEY_UP = "Release a key held with keydown."

# In the prompt's order: clicks, the pointer, the keyboard, then the task's control.
WORDS: tuple[Word[Handler], ...] = (
    Word("click", _clicker(1, MouseButton.LEFT),
         (_click_form("left click", Click(_P)),), ("left_single", "left_click")),
    Word("left_double", _clicker(2, MouseButton.LEFT),
         (_click_form("double-click", Click(_P, count=2)),), ("double_click",)),
    Word("left_triple", _clicker(3, MouseButton.LEFT),
         (_click_form("triple-click (selects a line)", Click(_P, count=3)),),
         ("triple_click",)),
    Word("right_single", _clicker(1, MouseButton.RIGHT),
         (_click_form("right click (context menu)", Click(_P, MouseButton.RIGHT)),),
         ("right_click",)),
    Word("middle_single", _clicker(1, MouseButton.MIDDLE),
         (_click_form("middle click (open in a new tab, paste on X11)",
                      Click(_P, MouseButton.MIDDLE)),),
         ("middle_click",)),
    Word("hover", _read_hover, (_hover,), ("move_to", "mouse_move", "move")),
    Word("mouse_down", _read_mouse_down,
         (_press_form("Press a mouse button and hold it (press-and-hold, or a drag step by "
                      "step with hover and mouse_up).", MouseDown),)),
    Word("mouse_up", _read_mouse_up,
         (_press_form("Release the button pressed with mouse_down.", MouseUp),)),
    Word("drag", _read_drag, (_drag,), ("select", "left_drag")),
    Word("scroll", _read_scroll, (_scroll,)),
    Word("hotkey", _read_hotkey, (_hotkey,), ("key",)),
    Word("keydown", _read_key_down, (key_form(KeyDown, _KEY_DOWN, _key()),),
         ("key_down",)),
    Word("keyup", _read_key_up, (key_form(KeyUp, _KEY_UP, _key()),),
         ("key_up", "release")),
    Word("type", _read_type, (_type,), ("write",)),
    Word("wait", _read_wait, (_wait,)),
    Word("finished", _read_finished, (_finished,), ("finish", "done", "answer")),
    Word("call_user", _read_call_user, (_call_user,), ("user_resp", "ask_user")),
    Word("fail", _read_fail, (_fail,)),
    # Read, never offered: a key pressed and released, as hotkey (the reference
    # parser emits only the key-down).
    Word("press", _read_hotkey),
)  # fmt: skip


def _call(form: ActionForm, args: Mapping[str, Any]) -> str:
    return f"{form.name}(" + ", ".join(f"{k}={quote(str(v))}" for k, v in args.items()) + ")"


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
        forms=published_forms(WORDS, spec),
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
