"""Event-level conformance: what a real application receives from each backend's input.

One list of checks (CASES) serves every backend: each button (back and forward
too), click counts 1-3, each modifier, moves, a drag path, a button chord, four
scroll directions, key chords, key down/up and auto-repeat, Unicode,
shell-hostile and multi-line text, refusals. A check drives
`target.backend.input` and reads what the application logged through a
`Target`, an adapter that turns the app's own event log into the neutral
records below (Press, Motion, Wheel, Key).

Reusing it for another backend (Wayland, say) takes a module of a few lines::

    import pytest
    from holodesk.platform.select import open_backend
    from tests.platform.conformance import TkTarget, conformance_test

    pytestmark = pytest.mark.x11  # or a marker of its own

    @pytest.fixture
    def target(probe):  # a ProbeApp on the display the backend drives
        with TkTarget.open(lambda: open_backend("wayland"), probe) as target:
            yield target

    test_conformance = conformance_test()

`conformance_test(refused=...)` returns one test function, parametrised over
CASES, that takes the module's `target` fixture; `refused` maps a case id to a
pattern of the InputError the backend must raise instead, for what its target
cannot do (so it is said, never lost in silence). Apps: `TkTarget` reads
tests/apps/probe_app.py on any X display (Xvfb, Xvnc, XWayland);
`tests.platform.web.support.WebTarget` reads the web test site's events page;
another app needs one more Target subclass.
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

import pytest

from holodesk.platform.base import Backend, MouseButton, Region
from holodesk.platform.errors import InputError
from holodesk.values.keys import BROWSER_KEYS, MEDIA_KEYS
from tests.support.probe import (
    BUTTON1_MASK,
    CONTROL_MASK,
    MOD1_MASK,
    MOD4_MASK,
    SHIFT_MASK,
    Event,
    ProbeApp,
    server_key_names,
    wheel_notches,
)

UNICODE_TEXT = "héllo wörld ñ € 日本"
# Format characters (Unicode Cf) are text: a zero-width joiner (as in emoji
# sequences), ZWNJ, LRM and RLM, a tag character. Few distinct ones, as a
# TigerVNC server binds each character beyond ASCII for good on its ~19 spare keys.
FORMAT_TEXT = "a\u200db\u200cc\u200ed\u200fe\U000e0041f"
# The keypad keys that type, and what they type.
KEYPAD_TYPING = {**{f"kp_{n}": str(n) for n in range(10)}, "kp_add": "+", "kp_subtract": "-",
                 "kp_multiply": "*", "kp_divide": "/", "kp_decimal": "."}  # fmt: skip
SHIFTED_ASCII = "Hello, World! ~ 1+1=2 (ok) {x} <a|b> \"q\" 'z' #$%^&*_?:@"
SHELL_HOSTILE = "rm -rf / && echo $HOME `id` \"q\" 'z' ; | > < * ? ~ \\ ! %s {x} $(reboot)"
MULTILINE = "line one\nline two $(rm -rf /) `id` 'q' \"d\" \\ %s {x}\r\nthree"

SCROLLS = {"down": (0, 3), "up": (0, -2), "right": (2, 0), "left": (-1, 0), "right-up": (1, -1)}

Field = Literal["line", "lines"]  # a one-line text field, a multi-line one


# -- what an application saw, whatever its toolkit --------------------------------------------
@dataclass(frozen=True)
class Press:
    """A button press or release at screen pixel (x, y)."""

    kind: Literal["press", "release"]
    button: MouseButton
    x: int
    y: int
    modifiers: frozenset[str] = frozenset()  # ctrl, shift, alt, meta held
    count: int = 1  # a press: the click of a series it is (2 for a double click)


@dataclass(frozen=True)
class Motion:
    x: int
    y: int
    left_held: bool


@dataclass(frozen=True)
class Wheel:
    """One notch: dy > 0 down, dx > 0 right."""

    dx: int
    dy: int


@dataclass(frozen=True)
class Key:
    """A key event; `key` is a character ("a", "A", "ß") or a contract name ("ctrl", "enter")."""

    kind: Literal["down", "up"]
    key: str
    modifiers: frozenset[str] = frozenset()


Observed = Press | Motion | Wheel | Key
R = TypeVar("R", Press, Motion, Wheel, Key)


class Target(ABC):
    """A backend and the application whose log shows what its input did."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @abstractmethod
    def pad(self) -> Region:
        """A region, in the backend's pixels, that takes pointer events (and does nothing)."""

    @abstractmethod
    def push_button(self) -> tuple[int, int]:
        """The centre of a push button of the app."""

    @abstractmethod
    def pushed(self) -> bool:
        """Whether that button has been invoked."""

    @abstractmethod
    def focus(self, field: Field) -> None:
        """Give a text field the keyboard focus (and clear it)."""

    @abstractmethod
    def text(self, field: Field) -> str:
        """What the field holds now."""

    @abstractmethod
    def observed(self) -> list[Observed]:
        """Every input event the app logged so far, in order."""

    def of(self, kind: type[R]) -> list[R]:
        return [e for e in self.observed() if isinstance(e, kind)]

    def wait(self, done: Callable[[], object], what: str, timeout_s: float = 10.0) -> None:
        """Poll until done() is truthy: apps log asynchronously."""
        deadline = time.monotonic() + timeout_s
        while not done():
            if time.monotonic() > deadline:
                tail = "\n".join(map(repr, self.observed()[-12:]))
                raise AssertionError(f"timed out waiting for {what}; last events:\n{tail}")
            time.sleep(0.02)

    def wait_text(self, field: Field, text: str, timeout_s: float = 10.0) -> str:
        self.wait(
            lambda: self.text(field) == text, f"the {field} field to hold {text!r}", timeout_s
        )
        return self.text(field)


# -- the Tk probe (tests/apps/probe_app.py), on any X display ---------------------------------
X_BUTTONS = {1: MouseButton.LEFT, 2: MouseButton.MIDDLE, 3: MouseButton.RIGHT,
             8: MouseButton.BACK, 9: MouseButton.FORWARD}  # fmt: skip
_X_MODIFIERS = {CONTROL_MASK: "ctrl", SHIFT_MASK: "shift", MOD1_MASK: "alt", MOD4_MASK: "meta"}
# The left modifiers are the side-neutral names, as every backend presses them.
_X_KEYS = {"Control_L": "ctrl", "Control_R": "ctrl_r", "Shift_L": "shift", "Shift_R": "shift_r",
           "Alt_L": "alt", "Alt_R": "alt_r", "Super_L": "meta", "Super_R": "meta_r",
           "Return": "enter", "KP_Enter": "kp_enter", "KP_Add": "kp_add",
           "KP_Subtract": "kp_subtract", "KP_Multiply": "kp_multiply",
           "KP_Divide": "kp_divide", "KP_Decimal": "kp_decimal",
           **{f"KP_{n}": f"kp_{n}" for n in range(10)},
           "XF86AudioMute": "volume_mute", "XF86AudioLowerVolume": "volume_down",
           "XF86AudioRaiseVolume": "volume_up", "XF86AudioPlay": "media_play_pause",
           "XF86AudioStop": "media_stop", "XF86AudioNext": "media_next",
           "XF86AudioPrev": "media_previous", "XF86Back": "browser_back",
           "XF86Forward": "browser_forward", "XF86Refresh": "browser_refresh",
           "XF86Stop": "browser_stop", "XF86Search": "browser_search",
           "XF86Favorites": "browser_favorites", "XF86HomePage": "browser_home"}  # fmt: skip
_TK_FIELDS: dict[str, str] = {"line": "entry", "lines": "area"}


def _x_key(event: Event) -> str:
    keysym, char = str(event["keysym"]), str(event["char"])
    if keysym in _X_KEYS:
        return _X_KEYS[keysym]
    if len(keysym) == 1:
        return keysym  # "a" even with Control held, whose char is "\x01"
    return char if char.isprintable() and char else keysym  # "eacute" -> "é"; "Left"


def _x_modifiers(state: int) -> frozenset[str]:
    return frozenset(name for mask, name in _X_MODIFIERS.items() if state & mask)


class TkTarget(Target):
    """The Tk probe app, with X button numbers, keysyms and state masks made neutral."""

    def __init__(self, backend: Backend, probe: ProbeApp) -> None:
        super().__init__(backend)
        self.probe = probe

    @classmethod
    @contextlib.contextmanager
    def open(cls, factory: Callable[[], Backend], probe: ProbeApp) -> Iterator[TkTarget]:
        """A target on a backend from `factory`, closed afterwards."""
        backend = factory()
        try:
            yield cls(backend, probe)
        finally:
            backend.close()

    def pad(self) -> Region:
        canvas = self.probe.widgets["canvas"]
        return Region(canvas.x, canvas.y, canvas.width, canvas.height)

    def push_button(self) -> tuple[int, int]:
        return self.probe.widgets["ok"].center

    def pushed(self) -> bool:
        return bool(self.probe.events("command"))

    def focus(self, field: Field) -> None:
        widget = _TK_FIELDS[field]
        self.backend.input.click(*self.probe.widgets[widget].center)
        self.probe.wait_for_event("focus", widget=widget)

    def text(self, field: Field) -> str:
        return self.probe.entry_text(_TK_FIELDS[field])

    def observed(self) -> list[Observed]:
        return tk_observed(server_key_names(self.probe.events(), self.probe.display))


def tk_observed(events: list[Event]) -> list[Observed]:
    """The probe's records as neutral ones."""
    out: list[Observed] = []
    count = 1
    for event in events:
        kind = event["type"]
        if kind == "multi":
            # Logged just before the press it belongs to (its binding runs first).
            count = event["count"]
        elif kind in ("press", "release") and event["num"] in X_BUTTONS:
            out.append(
                Press(
                    kind,
                    X_BUTTONS[event["num"]],
                    event["x_root"],
                    event["y_root"],
                    _x_modifiers(event["state"]),
                    count if kind == "press" else 1,
                )
            )
            if kind == "press":
                count = 1
        elif kind == "motion":
            out.append(
                Motion(event["x_root"], event["y_root"], bool(event["state"] & BUTTON1_MASK))
            )
        elif kind in ("key", "keyup"):
            out.append(
                Key("down" if kind == "key" else "up", _x_key(event), _x_modifiers(event["state"]))
            )
        else:  # presses of buttons 4-7 or wheel records are notches; the rest, nothing
            out.extend(Wheel(dx, dy) for dx, dy in wheel_notches([event]))
    return out


# -- the checks ---------------------------------------------------------------------------------
def _centre(region: Region) -> tuple[int, int]:
    return region.x + region.width // 2, region.y + region.height // 2


def _presses(target: Target, kind: str = "press") -> list[Press]:
    return [p for p in target.of(Press) if p.kind == kind]


def _wait_releases(target: Target, count: int) -> None:
    target.wait(lambda: len(_presses(target, "release")) >= count, f"{count} releases")


def check_button(target: Target, button: MouseButton) -> None:
    x, y = _centre(target.pad())
    target.backend.input.click(x, y, button=button)
    _wait_releases(target, 1)
    assert target.of(Press) == [Press("press", button, x, y), Press("release", button, x, y)]
    assert target.backend.input.held() == ((), ())


def check_click_count(target: Target, count: int) -> None:
    x, y = _centre(target.pad())
    target.backend.input.click(x, y, count=count)
    _wait_releases(target, count)
    presses = _presses(target)
    assert [p.count for p in presses] == list(range(1, count + 1))
    assert {(p.button, p.x, p.y) for p in target.of(Press)} == {(MouseButton.LEFT, x, y)}


def check_clicks_apart_are_single(target: Target) -> None:
    x, y = _centre(target.pad())
    target.backend.input.click(x, y)
    target.backend.input.click(x + 50, y)
    _wait_releases(target, 2)
    assert [p.count for p in _presses(target)] == [1, 1]


def check_click_invokes_a_push_button(target: Target) -> None:
    target.backend.input.click(*target.push_button())
    target.wait(target.pushed, "the push button to be invoked")


def check_modifiers(target: Target, modifiers: Sequence[str], expected: frozenset[str]) -> None:
    x, y = _centre(target.pad())
    target.backend.input.click(x, y, modifiers=modifiers)
    target.backend.input.click(x + 10, y)  # released after the click
    _wait_releases(target, 2)
    assert [p.modifiers for p in _presses(target)] == [expected, frozenset()]
    assert target.backend.input.held() == ((), ())


def check_move(target: Target) -> None:
    pad = target.pad()
    x, y = pad.x + 17, pad.y + 23
    target.backend.input.move(x, y)
    target.wait(lambda: Motion(x, y, False) in target.of(Motion), f"a motion to {(x, y)}")
    assert target.backend.input.cursor_position() == (x, y)


def check_points_off_screen_are_refused(target: Target) -> None:
    screen = target.backend.screen.virtual_desktop()
    x, y = _centre(target.pad())
    target.backend.input.move(x, y)
    target.wait(lambda: target.of(Motion), "the first move")
    outside = "outside|on no monitor"  # a screen's edge, or between monitors (Wayland, Windows)
    with pytest.raises(ValueError, match=outside):
        target.backend.input.move(screen.x + screen.width, screen.y + 10)
    with pytest.raises(ValueError, match=outside):
        target.backend.input.click(screen.x - 1, screen.y + 10)
    assert target.backend.input.cursor_position() == (x, y)
    assert not _presses(target)
    corner = (screen.x + screen.width - 1, screen.y + screen.height - 1)
    target.backend.input.move(*corner)  # the last pixel is in
    assert target.backend.input.cursor_position() == corner


def check_mouse_down_and_up(target: Target) -> None:
    x, y = _centre(target.pad())
    target.backend.input.move(x, y)
    target.backend.input.mouse_down(MouseButton.LEFT)
    target.wait(lambda: _presses(target), "the press")
    assert target.backend.input.held() == ((), (MouseButton.LEFT,))
    assert not _presses(target, "release")
    target.backend.input.move(x + 30, y + 5)
    target.backend.input.mouse_up(MouseButton.LEFT)
    _wait_releases(target, 1)
    assert _presses(target, "release") == [Press("release", MouseButton.LEFT, x + 30, y + 5)]
    assert target.backend.input.held() == ((), ())


def check_drag_path(target: Target) -> None:
    pad = target.pad()
    path = [(pad.x + 20 + 40 * i, pad.y + 30 + 25 * i) for i in range(6)]
    target.backend.input.drag(path, duration_s=0.1)
    _wait_releases(target, 1)
    assert target.of(Press) == [
        Press("press", MouseButton.LEFT, *path[0]),
        Press("release", MouseButton.LEFT, *path[-1]),
    ]
    assert [(m.x, m.y) for m in target.of(Motion) if m.left_held] == path[1:]


def check_button_chord(target: Target) -> None:
    # A button held across moves and another click stays held (RFB resends the mask).
    x, y = _centre(target.pad())
    target.backend.input.move(x, y)
    target.backend.input.mouse_down(MouseButton.RIGHT)
    target.backend.input.move(x + 5, y)
    target.backend.input.click(x + 10, y)
    target.backend.input.mouse_up(MouseButton.RIGHT)
    _wait_releases(target, 2)
    assert [(p.kind, p.button) for p in target.of(Press)] == [
        ("press", MouseButton.RIGHT),
        ("press", MouseButton.LEFT),
        ("release", MouseButton.LEFT),
        ("release", MouseButton.RIGHT),
    ]
    assert (target.of(Press)[-1].x, target.of(Press)[-1].y) == (x + 10, y)


def check_scroll(target: Target, dx: int, dy: int) -> None:
    x, y = _centre(target.pad())
    target.backend.input.scroll(x, y, dx, dy)
    expected = [Wheel(0, 1 if dy > 0 else -1)] * abs(dy) + [Wheel(1 if dx > 0 else -1, 0)] * abs(dx)
    target.wait(lambda: len(target.of(Wheel)) >= len(expected), f"{len(expected)} notches")
    assert target.of(Wheel) == expected


def _keys(target: Target) -> list[tuple[str, str]]:
    """(kind, key) of each key event, an auto-repeat as a second press.

    X reports a repeat as a release and a press; the DOM as a press marked repeat.
    """
    keys: list[tuple[str, str]] = []
    for key in target.of(Key):
        if key.kind == "down" and keys and keys[-1] == ("up", key.key):
            keys.pop()
        keys.append((key.kind, key.key))
    return keys


def check_key_chord(target: Target) -> None:
    target.focus("line")
    target.backend.input.key_chord(["ctrl", "a"])
    target.wait(lambda: ("up", "ctrl") in _keys(target), "ctrl to be released")
    assert _keys(target) == [("down", "ctrl"), ("down", "a"), ("up", "a"), ("up", "ctrl")]
    assert "ctrl" in target.of(Key)[1].modifiers
    assert target.text("line") == ""  # a chord, not typing


def check_named_keys_edit_text(target: Target) -> None:
    target.focus("line")
    target.backend.input.type_text("abc")
    target.wait_text("line", "abc")
    target.backend.input.key_chord(["left"])
    target.backend.input.type_text("X")
    assert target.wait_text("line", "abXc") == "abXc"
    for key in ("home", "delete", "end", "BackSpace"):
        target.backend.input.key_chord([key])
    assert target.wait_text("line", "bX") == "bX"


def check_key_down_and_up(target: Target) -> None:
    target.focus("line")
    target.backend.input.key_down("shift")
    target.backend.input.key_down("b")
    target.backend.input.key_down("b")  # auto-repeat: pressed again, released once
    target.wait(lambda: _keys(target).count(("down", "B")) == 2, "two presses of B")
    assert target.backend.input.held() == (("shift", "b"), ())
    target.backend.input.key_up("b")
    target.backend.input.key_up("shift")
    target.wait(lambda: ("up", "shift") in _keys(target), "shift to be released")
    assert _keys(target) == [("down", "shift"), ("down", "B"), ("down", "B"), ("up", "B"),
                             ("up", "shift")]  # fmt: skip
    assert target.wait_text("line", "BB") == "BB"
    assert target.backend.input.held() == ((), ())


def check_keypad_keys(target: Target) -> None:
    # Each press arrives as its keypad key (not the digit row's), with no Shift
    # pressed to reach it, and types its character.
    target.focus("line")
    for key in KEYPAD_TYPING:
        target.backend.input.key_chord([key])
    target.backend.input.key_chord(["kp_enter"])
    expected = "".join(KEYPAD_TYPING.values())
    assert target.wait_text("line", expected) == expected
    names = [*KEYPAD_TYPING, "kp_enter"]
    target.wait(lambda: len(_keys(target)) >= 2 * len(names), "every key to be released")
    # TigerVNC's Xvnc turns Num Lock on itself (a Num_Lock tap first) and lets its
    # releases read with Num Lock off (KP_Insert for kp_0): a server's own doing, so
    # only the presses are compared, and every key must be released.
    keys = [(kind, key) for kind, key in _keys(target) if key != "Num_Lock"]
    assert [key for kind, key in keys if kind == "down"] == names
    assert [kind for kind, _ in keys] == ["down", "up"] * len(names)
    assert all(not k.modifiers for k in target.of(Key))


def check_keys_arrive(target: Target, keys: Sequence[str]) -> None:
    # Each arrives as itself; what it then does is the desktop's business (none here).
    target.focus("line")
    for key in keys:
        target.backend.input.key_chord([key])
    target.wait(lambda: ("up", keys[-1]) in _keys(target), f"{keys[-1]} to be released")
    assert _keys(target) == [(kind, key) for key in keys for kind in ("down", "up")]
    assert target.text("line") == ""  # they type nothing


def check_sided_modifiers(target: Target) -> None:
    # A right-side modifier is its own key, and holds its modifier like the left one.
    target.focus("line")
    target.backend.input.key_chord(["ctrl_r", "a"])
    target.backend.input.key_chord(["shift_r", "b"])
    # Shift stays held while one side of it is: c types as C after shift_l goes up.
    target.backend.input.key_down("shift_l")
    target.backend.input.key_down("shift_r")
    target.backend.input.key_up("shift_l")
    target.backend.input.key_chord(["c"])
    target.backend.input.key_up("shift_r")
    assert target.wait_text("line", "BC") == "BC"
    target.wait(lambda: _keys(target).count(("up", "shift_r")) == 2, "shift_r to be released")
    assert _keys(target)[:8] == [
        ("down", "ctrl_r"), ("down", "a"), ("up", "a"), ("up", "ctrl_r"),
        ("down", "shift_r"), ("down", "B"), ("up", "B"), ("up", "shift_r"),
    ]  # fmt: skip
    assert "ctrl" in target.of(Key)[1].modifiers
    assert "shift" in target.of(Key)[5].modifiers


def check_caps_lock_leaves_typed_text_alone(target: Target) -> None:
    # type_text types exactly its text whatever the lock state (action.proto).
    target.focus("line")
    target.backend.input.key_chord(["capslock"])  # on
    try:
        target.backend.input.type_text("Hello, World 42")
        assert target.wait_text("line", "Hello, World 42") == "Hello, World 42"
    finally:
        target.backend.input.key_chord(["capslock"])  # off again, for the next check


def check_held_character_without_a_key(target: Target) -> None:
    # No key of a US layout types these: bound (X11), sent as keysyms (VNC), or text (web).
    target.focus("line")
    for char in "ßé€":
        target.backend.input.key_down(char)
        target.backend.input.key_up(char)
    assert target.wait_text("line", "ßé€") == "ßé€"


def check_types(target: Target, field: Field, text: str, expected: str) -> None:
    target.focus(field)
    target.backend.input.type_text(text)
    assert target.wait_text(field, expected, timeout_s=30) == expected


def check_multiline_presses_enter(target: Target) -> None:
    check_types(target, "lines", MULTILINE, MULTILINE.replace("\r\n", "\n"))
    assert _keys(target).count(("down", "enter")) == 2  # "\r\n" is one line break


def check_lines_join_in_a_one_line_field(target: Target) -> None:
    # Return does nothing in a one-line field: the lines join, and nothing is lost.
    check_types(target, "line", "one\ntwo", "onetwo")
    assert ("down", "enter") in _keys(target)


def check_control_characters_are_refused(target: Target) -> None:
    target.focus("line")
    with pytest.raises(InputError, match="control character U\\+0007"):
        target.backend.input.type_text("ab\x07c")
    target.backend.input.type_text("d")
    assert target.wait_text("line", "d") == "d"  # nothing of the refused text went out


def check_release_all(target: Target) -> None:
    target.backend.input.move(*_centre(target.pad()))
    target.backend.input.key_down("ctrl")
    target.backend.input.mouse_down(MouseButton.LEFT)
    target.wait(lambda: _presses(target), "the press")
    target.backend.input.release_all()
    assert target.backend.input.held() == ((), ())
    target.wait(lambda: ("up", "ctrl") in _keys(target), "ctrl to be released")
    assert [p.button for p in _presses(target, "release")] == [MouseButton.LEFT]


@dataclass(frozen=True)
class Case:
    id: str
    check: Callable[..., None]
    args: tuple[object, ...] = ()

    def run(self, target: Target) -> None:
        self.check(target, *self.args)


CASES: tuple[Case, ...] = (
    *(Case(f"button-{b.value}", check_button, (b,)) for b in MouseButton),
    *(Case(f"click-count-{n}", check_click_count, (n,)) for n in (1, 2, 3)),
    Case("clicks-apart-are-single", check_clicks_apart_are_single),
    Case("click-invokes-a-push-button", check_click_invokes_a_push_button),
    *(
        Case(f"modifier-{m}", check_modifiers, ([m], frozenset([m])))
        for m in ("ctrl", "shift", "alt", "meta")
    ),
    Case("modifiers-two", check_modifiers, (["ctrl", "shift"], frozenset(["ctrl", "shift"]))),
    Case("modifiers-aliases", check_modifiers, (["Alt", "cmd"], frozenset(["alt", "meta"]))),
    Case("move", check_move),
    Case("points-off-screen-are-refused", check_points_off_screen_are_refused),
    Case("mouse-down-and-up", check_mouse_down_and_up),
    Case("drag-path", check_drag_path),
    Case("button-chord", check_button_chord),
    *(Case(f"scroll-{name}", check_scroll, delta) for name, delta in SCROLLS.items()),
    Case("key-chord", check_key_chord),
    Case("named-keys-edit-text", check_named_keys_edit_text),
    Case("key-down-and-up", check_key_down_and_up),
    Case("held-character-without-a-key", check_held_character_without_a_key),
    Case("shifted-ascii", check_types, ("line", SHIFTED_ASCII, SHIFTED_ASCII)),
    Case("unicode-text", check_types, ("line", UNICODE_TEXT, UNICODE_TEXT)),
    Case("format-characters", check_types, ("line", FORMAT_TEXT, FORMAT_TEXT)),
    Case("caps-lock-leaves-typed-text-alone", check_caps_lock_leaves_typed_text_alone),
    Case("keypad-keys", check_keypad_keys),
    Case("sided-modifiers", check_sided_modifiers),
    Case("media-keys", check_keys_arrive, (MEDIA_KEYS,)),
    Case("browser-keys", check_keys_arrive, (BROWSER_KEYS,)),
    Case("shell-hostile-text", check_types, ("line", SHELL_HOSTILE, SHELL_HOSTILE)),
    Case("multiline-text", check_multiline_presses_enter),
    Case("lines-join-in-a-one-line-field", check_lines_join_in_a_one_line_field),
    Case("control-characters-are-refused", check_control_characters_are_refused),
    Case("release-all", check_release_all),
)


def conformance_test(
    refused: Mapping[str, str] | None = None, checked_elsewhere: Mapping[str, str] | None = None
) -> Callable[..., None]:
    """A test function over CASES for the calling module's `target` fixture.

    `refused`: case id -> a pattern of the InputError the backend must raise
    instead of doing it (a limit of its target, said out loud).
    `checked_elsewhere`: case id -> why the target acts on it and which test
    checks that instead (browser keys navigate a web target's tab).
    """
    refusals = dict(refused or {})
    elsewhere = dict(checked_elsewhere or {})
    unknown = (set(refusals) | set(elsewhere)) - {case.id for case in CASES}
    if unknown:
        raise ValueError(f"no conformance cases named {sorted(unknown)}")

    @pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
    def test_conformance(case: Case, target: Target) -> None:
        if case.id in elsewhere:
            pytest.skip(elsewhere[case.id])
        pattern = refusals.get(case.id)
        if pattern is None:
            case.run(target)
            return
        with pytest.raises(InputError, match=pattern):
            case.run(target)
        assert target.backend.input.held() == ((), ())

    return test_conformance
