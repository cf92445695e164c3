"""The Holo answer format's vocabulary, said once: every name its parser reads, the
reader it runs (JSON action object -> contract actions in frame pixels), the forms
the prompt, the schema (schema.py) and the docs publish for it, and the other names
models write for it (click, type, key, hotkey as "ctrl+c", triple_click, ...:
lenient reading, never a wider space).

The cookbook verbs (click_element, write_element_abs, scroll, hotkey, wait,
answer, goto, go_back, refresh) keep their fields; the desktop ones reach the
rest of the contract: any button, 1-3 clicks and held modifiers on
click_element, write (typing where the caret is, no click first), scroll by an
amount at a point, mouse_down / mouse_up, move, drag along a path with a button,
modifiers and a duration, key_down / key_up, fail and ask_user.

Each reader reads its fields with the typed readers of `values`, so any malformed
field is a DialectParseError with a hint.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
from holodesk.daemon.dialects.action_space import (
    ActionField,
    ActionForm,
    ActionSpace,
    Example,
    FormMaker,
    Word,
    call_signature,
    json_answer,
    key_form,
    published_forms,
)
from holodesk.daemon.dialects.base import DialectParseError
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.values import (
    brief,
    key_list,
    key_name,
    number,
    optional_point,
    point_value,
    required_point,
    text,
)
from holodesk.daemon.geometry import Point

_BUTTONS = tuple(b.value for b in MouseButton)
_MODIFIERS = tuple(m.value for m in Modifier)
MAX_PATH_POINTS = 64
MAX_CHORD_KEYS = 8
MAX_DRAG_MS = 60_000
MAX_SCROLL_NOTCHES = 100

_P = Point(500, 300)
_Q = Point(700, 450)


# --- the forms' fields -------------------------------------------------------------------


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


_KEY = ActionField("key", "key", "one key name (see keys below)")
_CONTENT = ActionField("content", "text", "the text to type, any Unicode", min_items=1)


# --- the forms ---------------------------------------------------------------------------


def _click_element(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
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
            Example(
                {**_xy(_P), "element": "Save button"},
                (Click(_P),),
                "The Save button is at the top.",
            ),
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


def _click_form(summary: str, click: Click) -> FormMaker:
    """double_click and right_click: a click of one kind at x, y."""

    def make(name: str, spec: DialectSpec) -> ActionForm:
        example = Example({**_xy(_P), "element": "report.pdf"}, (click,))
        return ActionForm(name, summary, (_point(), _element()), (example,))

    return make


def _move(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "Move the pointer to x, y without clicking (hover).",
        (_point(),),
        (Example(_xy(_P), (Move(_P),)),),
    )


def _press_form(what: str, kind: type[MouseDown] | type[MouseUp]) -> FormMaker:
    """mouse_down and mouse_up: a button pressed or released, at x, y when given."""

    def make(name: str, spec: DialectSpec) -> ActionForm:
        return ActionForm(
            name,
            f"{what} (at x, y when given, else where the pointer is).",
            (_button(), _point(required=False, what="where to move first")),
            (
                Example({"button": "left", **_xy(_P)}, (kind(MouseButton.LEFT, _P),)),
                Example({"button": "left"}, (kind(MouseButton.LEFT),)),
                *(Example({"button": b.value}, (kind(b),)) for b in MouseButton),
            ),
        )

    return make


def _drag(name: str, spec: DialectSpec) -> ActionForm:
    path = (_P, Point(600, 300), _Q)
    return ActionForm(
        name,
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


def _scroll(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
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


def _write_element_abs(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "Click the field at x, y, then type content into it.",
        (_CONTENT, _point(what="the field"), _element()),
        (
            Example(
                {"content": "Paris", **_xy(_P), "element": "Search field"},
                (Click(_P), TypeText("Paris")),
            ),
        ),
    )


def _write(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "Type content where the keyboard focus (the caret) already is; no click.",
        (_CONTENT,),
        (Example({"content": "héllo wörld ✓"}, (TypeText("héllo wörld ✓"),)),),
    )


def _hotkey(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        'Press keys together and release them, e.g. ["ctrl", "c"].',
        (
            ActionField(
                "keys", "keys", "the chord, modifiers first", min_items=1, max_items=MAX_CHORD_KEYS
            ),
        ),
        (Example({"keys": ["ctrl", "shift", "t"]}, (KeyChord(("ctrl", "shift", "t")),)),),
    )


def _wait(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
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


def _goto(name: str, spec: DialectSpec) -> ActionForm:
    return ActionForm(
        name,
        "Open a web address in the browser.",
        (ActionField("url", "text", "the address (no spaces)", pattern=r"^\S+$"),),
        (Example({"url": "https://example.org/"}, (Navigate("https://example.org/"),)),),
    )


def _keystroke_form(summary: str, keys: tuple[str, ...]) -> FormMaker:
    """go_back and refresh: a browser verb as the keystroke a desktop browser takes."""

    def make(name: str, spec: DialectSpec) -> ActionForm:
        return ActionForm(name, summary, (), (Example({}, (KeyChord(keys),)),))

    return make


def _text_form(
    summary: str, field: ActionField, value: str, kind: Callable[[str], ActionKind]
) -> FormMaker:
    """answer, fail and ask_user: one text field, and the action it ends the task with."""

    def make(name: str, spec: DialectSpec) -> ActionForm:
        return ActionForm(name, summary, (field,), (Example({field.name: value}, (kind(value),)),))

    return make


# --- the readers -------------------------------------------------------------------------


Obj = Mapping[str, Any]
Handler = Callable[[Obj, DialectSpec, ImageGeometry], list[ActionKind]]


def _read_button(obj: Obj, default: MouseButton = MouseButton.LEFT) -> MouseButton:
    raw = obj.get("button")
    if raw is None:
        return default
    if isinstance(raw, str):
        try:
            return MouseButton(raw.strip().lower())
        except ValueError:
            pass
    raise DialectParseError(
        f"button is {brief(raw)}", "Use button left, right, middle, back or forward."
    )


def _read_modifiers(obj: Obj, spec: DialectSpec) -> tuple[Modifier, ...]:
    raw = obj.get("modifiers", obj.get("hold_keys"))
    if raw is None or raw == []:
        return ()
    keys = key_list(raw, spec.key_aliases)
    try:
        return tuple(Modifier(k) for k in keys)
    except ValueError:
        raise DialectParseError(
            f"modifiers {brief(raw)} are not all modifier keys",
            "Modifiers are ctrl, shift, alt and meta.",
        ) from None


def _read_count(obj: Obj, default: int) -> int:
    raw = obj.get("count", obj.get("clicks"))
    if raw is None:
        return default
    value = number(raw, "count")
    if value not in (1.0, 2.0, 3.0):
        raise DialectParseError(f"count is {value:g}", "count is 1, 2 or 3.")
    return int(value)


def _clicker(count: int, button: MouseButton) -> Handler:
    def handle(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
        return [
            Click(
                point=required_point(obj, geo),
                button=_read_button(obj, button),
                count=_read_count(obj, count),
                modifiers=_read_modifiers(obj, spec),
            )
        ]

    return handle


def _read_move(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [Move(required_point(obj, geo))]


def _read_mouse_down(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [MouseDown(_read_button(obj), optional_point(obj, geo))]


def _read_mouse_up(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [MouseUp(_read_button(obj), optional_point(obj, geo))]


def _read_drag(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    path: list[Point]
    raw_path = obj.get("path")
    if raw_path is not None:
        if not isinstance(raw_path, list) or not 2 <= len(raw_path) <= MAX_PATH_POINTS:
            raise DialectParseError(
                f"path is {brief(raw_path)}",
                f"Give path as a list of 2 to {MAX_PATH_POINTS} [x, y] points.",
            )
        path = [point_value(p, geo, f"path[{i}]") for i, p in enumerate(raw_path)]
    else:
        start = obj.get("from", obj.get("start", obj.get("start_point")))
        end = obj.get("to", obj.get("end", obj.get("end_point")))
        if start is None or end is None:
            raise DialectParseError(
                "drag needs a path or from/to points", 'Give "from": [x, y] and "to": [x, y].'
            )
        path = [point_value(start, geo, "from"), point_value(end, geo, "to")]
    return [
        Drag(
            path=tuple(path),
            button=_read_button(obj),
            modifiers=_read_modifiers(obj, spec),
            duration_ms=_read_duration_ms(obj),
        )
    ]


def _read_duration_ms(obj: Obj) -> int:
    raw = obj.get("duration_ms")
    if raw is None:
        return 0
    value = number(raw, "duration_ms")
    if not 0 <= value <= MAX_DRAG_MS:
        raise DialectParseError(
            f"duration_ms is {value:g}", f"duration_ms is 0 to {MAX_DRAG_MS} milliseconds."
        )
    return round(value)


def _read_write(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    content = text(obj, "content", "text", "value")
    if not content:
        raise DialectParseError("write has no content", "Put the text to type in content.")
    point = optional_point(obj, geo)
    out: list[ActionKind] = [] if point is None else [Click(point)]
    out.append(TypeText(content))
    if spec.write_presses_enter:
        out.append(KeyChord(("enter",)))
    return out


_SCROLL = {"down": (0, 1), "up": (0, -1), "right": (1, 0), "left": (-1, 0)}


def _read_scroll(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    raw = obj.get("direction", "down")
    direction = raw.strip().lower() if isinstance(raw, str) else None
    if direction not in _SCROLL:
        raise DialectParseError(f"direction is {brief(raw)}", "Scroll up, down, left or right.")
    amount_raw = obj.get("amount", obj.get("notches"))
    amount = spec.scroll_notches
    if amount_raw is not None:
        value = number(amount_raw, "amount")
        if not 1 <= value <= MAX_SCROLL_NOTCHES:
            raise DialectParseError(
                f"amount is {value:g}", f"amount is 1 to {MAX_SCROLL_NOTCHES} notches."
            )
        amount = round(value)
    point = optional_point(obj, geo)
    if point is None:
        point = Point(geo.frame.width / 2, geo.frame.height / 2)
    dx, dy = _SCROLL[direction]
    return [Scroll(point=point, dx=dx * amount, dy=dy * amount)]


def _read_hotkey(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    for name in ("keys", "key", "hotkey", "combination"):
        if name in obj:
            return [KeyChord(key_list(obj[name], spec.key_aliases))]
    raise DialectParseError("hotkey has no keys", 'Give keys, e.g. "keys": ["ctrl", "c"].')


def _read_key_down(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [KeyDown(key_name(obj.get("key"), spec.key_aliases))]


def _read_key_up(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [KeyUp(key_name(obj.get("key"), spec.key_aliases))]


def _read_wait(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    raw = obj.get("seconds", obj.get("duration"))
    seconds = spec.default_wait_s if raw is None else number(raw, "seconds")
    if seconds < 0:
        raise DialectParseError(f"seconds is {seconds:g}", "Wait a positive number of seconds.")
    return [Wait(round(min(seconds, spec.max_wait_s) * 1000))]


def _read_answer(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [Done(text(obj, "content", "answer", "text", required=False))]


def _read_fail(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [Fail(text(obj, "reason", "content", "text", required=False) or "the model gave up")]


def _read_ask_user(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [AskUser(text(obj, "question", "content", "text"))]


# Browser verbs of the web-agent formats, as the keystrokes a desktop browser takes.
def _read_go_back(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [KeyChord(("alt", "left"))]


def _read_refresh(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    return [KeyChord(("f5",))]


def _read_goto(obj: Obj, spec: DialectSpec, geo: ImageGeometry) -> list[ActionKind]:
    url = text(obj, "url", "content").strip()
    if not url:
        raise DialectParseError("goto has no url", 'Give the address, e.g. "url": "example.org".')
    # The client loads it directly (web target) or types it into the address bar.
    return [Navigate(url)]


# --- the vocabulary ------------------------------------------------------------------------

# In the prompt's order: clicks, the keyboard, the pointer, then the task's control.
WORDS: tuple[Word[Handler], ...] = (
    Word("click", _clicker(1, MouseButton.LEFT), (("click_element", _click_element),),
         ("left_click", "tap")),
    Word("double_click", _clicker(2, MouseButton.LEFT),
         (_click_form("Double-click with the left button at x, y.", Click(_P, count=2)),),
         ("double_click_element", "doubleclick")),
    Word("right_click", _clicker(1, MouseButton.RIGHT),
         (_click_form("Right-click at x, y (opens a context menu).",
                      Click(_P, MouseButton.RIGHT)),),
         ("right_click_element",)),
    Word("write", _read_write, (("write_element_abs", _write_element_abs), _write),
         ("write_element", "type", "type_text", "input")),
    Word("hotkey", _read_hotkey, (_hotkey,), ("key", "keys", "press", "press_key", "key_press")),
    Word("key_down", _read_key_down,
         (key_form(KeyDown, "Press a key and keep it down (release it later with key_up).",
                   _KEY),)),
    Word("key_up", _read_key_up,
         (key_form(KeyUp, "Release a key pressed with key_down.", _KEY),)),
    Word("move", _read_move, (_move,), ("hover", "move_to", "mouse_move")),
    Word("mouse_down", _read_mouse_down,
         (_press_form("Press a mouse button and hold it: a press-and-hold, or a drag step by "
                      "step", MouseDown),)),
    Word("mouse_up", _read_mouse_up,
         (_press_form("Release a mouse button pressed with mouse_down", MouseUp),)),
    Word("drag", _read_drag, (_drag,), ("drag_and_drop", "left_click_drag")),
    Word("scroll", _read_scroll, (_scroll,)),
    Word("wait", _read_wait, (_wait,), ("sleep",)),
    Word("goto", _read_goto, (_goto,), ("goto_url", "navigate")),
    Word("go_back", _read_go_back,
         (_keystroke_form("Go back one page in the browser (alt+left).", ("alt", "left")),),
         ("back",)),
    Word("refresh", _read_refresh, (_keystroke_form("Reload the page (f5).", ("f5",)),)),
    Word("answer", _read_answer,
         (_text_form("The task is done; content is the full answer.",
                     ActionField("content", "text", "the answer"),
                     "The invoice total is 42.10 EUR.", Done),),
         ("done", "finish", "finished")),
    Word("fail", _read_fail,
         (_text_form("The task cannot be done; reason says why.",
                     ActionField("reason", "text", "why"), "The file does not exist.", Fail),),
         ("give_up", "failed")),
    Word("ask_user", _read_ask_user,
         (_text_form("Only a human can continue: ask them.",
                     ActionField("question", "text", "the question shown to the user"),
                     "What is the 2FA code?", AskUser),),
         ("ask", "call_user")),
    # Read, never offered: click_element's button and count say the same.
    Word("triple_click", _clicker(3, MouseButton.LEFT)),
    Word("middle_click", _clicker(1, MouseButton.MIDDLE)),
)  # fmt: skip


def _signature(form: ActionForm) -> str:
    """`- click_element(x, y, element?, ...): ...`: an optional field marked ?."""
    return call_signature(form, lambda name, field: f"{name}?")


def holo_action_space(spec: DialectSpec) -> ActionSpace:
    return ActionSpace(
        forms=published_forms(WORDS, spec),
        write=json_answer("", "action", "action"),  # {note, thought, action}
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
