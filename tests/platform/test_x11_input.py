"""XTEST input arriving in a real Tk app on Xvfb, as the app itself reports it."""

from __future__ import annotations

import pytest

from holodesk.platform.base import Backend, MouseButton
from holodesk.platform.select import open_backend
from holodesk.platform.x11.input import X11Input
from tests.support.probe import (
    BUTTON1_MASK,
    CONTROL_MASK,
    LOCK_MASK,
    MOD1_MASK,
    MOD4_MASK,
    SHIFT_MASK,
    Event,
    ProbeApp,
    wheel_notches,
)

pytestmark = pytest.mark.x11

UNICODE_TEXT = "héllo wörld ñ € 日本"


def _presses(probe: ProbeApp, num: int) -> list[Event]:
    return [e for e in probe.events("press") if e["num"] == num]


def _driver(backend: Backend) -> X11Input:
    assert isinstance(backend.input, X11Input)
    return backend.input


@pytest.fixture
def focused(x11: Backend, probe: ProbeApp) -> ProbeApp:
    """The probe with keyboard focus in its Entry (clicked, like a user would)."""
    x11.input.click(*probe.widgets["entry"].center)
    probe.wait_for_event("focus", widget="entry")
    return probe


@pytest.mark.parametrize("count", [1, 2, 3])
def test_click_counts(x11: Backend, probe: ProbeApp, count: int) -> None:
    x, y = probe.widgets["canvas"].center
    x11.input.click(x, y, count=count)
    probe.wait_for(lambda _: len(probe.events("release")) == count)
    presses = _presses(probe, 1)
    assert len(presses) == count
    assert {(p["x_root"], p["y_root"], p["widget"]) for p in presses} == {(x, y, "canvas")}
    # Tk's own multi-click detection agrees with the count.
    assert [m["count"] for m in probe.events("multi")] == list(range(2, count + 1))


def test_click_invokes_the_button(x11: Backend, probe: ProbeApp) -> None:
    x11.input.click(*probe.widgets["ok"].center)
    assert probe.wait_for_event("command", widget="ok")


@pytest.mark.parametrize(
    ("button", "number"), [(MouseButton.LEFT, 1), (MouseButton.MIDDLE, 2), (MouseButton.RIGHT, 3)]
)
def test_buttons(x11: Backend, probe: ProbeApp, button: MouseButton, number: int) -> None:
    x, y = probe.widgets["canvas"].center
    x11.input.click(x, y, button=button)
    release = probe.wait_for_event("release", num=number)
    assert (release["x_root"], release["y_root"]) == (x, y)
    assert [p["num"] for p in probe.events("press")] == [number]


@pytest.mark.parametrize(
    ("modifier", "mask"),
    [("ctrl", CONTROL_MASK), ("shift", SHIFT_MASK), ("alt", MOD1_MASK), ("meta", MOD4_MASK)],
)
def test_click_with_modifier_held(x11: Backend, probe: ProbeApp, modifier: str, mask: int) -> None:
    x, y = probe.widgets["canvas"].center
    x11.input.click(x, y, modifiers=[modifier])
    x11.input.click(x + 10, y)
    probe.wait_for(lambda _: len(probe.events("release")) == 2)
    with_modifier, without = _presses(probe, 1)
    assert with_modifier["state"] & mask
    assert not without["state"] & mask  # released after the click
    assert x11.input.held() == ((), ())


def test_two_modifiers_at_once(x11: Backend, probe: ProbeApp) -> None:
    x11.input.click(*probe.widgets["canvas"].center, modifiers=["ctrl", "shift"])
    press = probe.wait_for_event("press", num=1)
    assert press["state"] & (CONTROL_MASK | SHIFT_MASK) == CONTROL_MASK | SHIFT_MASK


def test_move_reaches_the_app_and_the_pointer(x11: Backend, probe: ProbeApp) -> None:
    canvas = probe.widgets["canvas"]
    x, y = canvas.x + 17, canvas.y + 23
    x11.input.move(x, y)
    motion = probe.wait_for_event("motion", x_root=x, y_root=y)
    assert motion["widget"] == "canvas"
    assert x11.input.cursor_position() == (x, y)


def test_move_off_screen_is_refused(x11: Backend) -> None:
    with pytest.raises(ValueError, match="outside the X screen"):
        x11.input.move(1280, 10)


def test_mouse_down_and_up(x11: Backend, probe: ProbeApp) -> None:
    x, y = probe.widgets["canvas"].center
    x11.input.move(x, y)
    x11.input.mouse_down(MouseButton.LEFT)
    probe.wait_for_event("press", num=1)
    assert x11.input.held() == ((), (MouseButton.LEFT,))
    assert probe.events("release") == []
    x11.input.move(x + 30, y + 5)
    x11.input.mouse_up(MouseButton.LEFT)
    release = probe.wait_for_event("release", num=1)
    assert (release["x_root"], release["y_root"]) == (x + 30, y + 5)
    assert x11.input.held() == ((), ())


def test_drag_along_a_path(x11: Backend, probe: ProbeApp) -> None:
    canvas = probe.widgets["canvas"]
    path = [(canvas.x + 20 + 40 * i, canvas.y + 30 + 25 * i) for i in range(6)]
    x11.input.drag(path, duration_s=0.1)
    release = probe.wait_for_event("release", num=1)
    press = probe.events("press")[0]
    assert (press["x_root"], press["y_root"]) == path[0]
    assert (release["x_root"], release["y_root"]) == path[-1]
    held_motions = [
        (m["x_root"], m["y_root"]) for m in probe.events("motion") if m["state"] & BUTTON1_MASK
    ]
    assert held_motions == path[1:]


@pytest.mark.parametrize(("dx", "dy"), [(0, 3), (0, -2), (2, 0), (-1, 0), (1, -1)], ids=str)
def test_scroll_in_every_direction(x11: Backend, probe: ProbeApp, dx: int, dy: int) -> None:
    x, y = probe.widgets["canvas"].center
    x11.input.scroll(x, y, dx, dy)
    expected = [(0, 1 if dy > 0 else -1)] * abs(dy) + [(1 if dx > 0 else -1, 0)] * abs(dx)
    probe.wait_for(lambda events: len(wheel_notches(events)) == len(expected))
    assert wheel_notches(probe.events()) == expected


def test_key_chord_holds_modifiers_and_releases_in_reverse(x11: Backend, focused: ProbeApp) -> None:
    x11.input.key_chord(["ctrl", "a"])
    focused.wait_for_event("keyup", keysym="Control_L")
    keys = [(e["type"], e["keysym"]) for e in focused.events() if e["type"] in ("key", "keyup")]
    assert keys == [
        ("key", "Control_L"),
        ("key", "a"),
        ("keyup", "a"),
        ("keyup", "Control_L"),
    ]
    a_press = focused.events("key")[1]
    assert a_press["state"] & CONTROL_MASK
    assert focused.entry_text() == ""  # a chord, not typing


def test_named_keys_edit_the_entry(x11: Backend, focused: ProbeApp) -> None:
    x11.input.type_text("abc")
    focused.wait_for_entry("abc")
    x11.input.key_chord(["left"])
    x11.input.type_text("X")
    assert focused.wait_for_entry("abXc") == "abXc"
    x11.input.key_chord(["home"])
    x11.input.key_chord(["delete"])
    x11.input.key_chord(["end"])
    x11.input.key_chord(["BackSpace"])
    assert focused.wait_for_entry("bX") == "bX"


def test_key_down_and_up(x11: Backend, focused: ProbeApp) -> None:
    x11.input.key_down("shift")
    x11.input.key_down("a")
    focused.wait_for_event("key", keysym="A")
    assert x11.input.held() == (("shift", "a"), ())
    x11.input.key_up("a")
    x11.input.key_up("shift")
    focused.wait_for_event("keyup", keysym="Shift_L")
    assert focused.entry_text() == "A"
    assert x11.input.held() == ((), ())


def test_held_character_without_a_key(x11: Backend, focused: ProbeApp) -> None:
    # ß has no key on the Xvfb's US layout: it is bound while held.
    x11.input.key_down("ß")
    x11.input.key_up("ß")
    assert focused.wait_for_entry("ß") == "ß"


def test_type_text_with_shifted_ascii(x11: Backend, focused: ProbeApp) -> None:
    text = "Hello, World! ~ 1+1=2 (ok) {x} <a|b> \"q\" 'z' #$%^&*_?:@"
    x11.input.type_text(text)
    assert focused.wait_for_entry(text) == text


def test_type_unicode_text_arrives_intact(x11: Backend, focused: ProbeApp) -> None:
    driver = _driver(x11)
    before = driver.keymap_rows()
    x11.input.type_text(UNICODE_TEXT)
    assert focused.wait_for_entry(UNICODE_TEXT) == UNICODE_TEXT
    assert driver.keymap_rows() != before  # bindings linger for slow clients...
    driver.restore_keymap()
    assert driver.keymap_rows() == before  # ...and are undone afterwards


def test_keymap_is_restored_by_itself(x11: Backend, focused: ProbeApp) -> None:
    driver = _driver(x11)
    before = driver.keymap_rows()
    x11.input.type_text("€")
    focused.wait_for_entry("€")
    focused.wait_for(lambda _: driver.keymap_rows() == before, timeout=10)


def test_more_distinct_characters_than_spare_keycodes(x11: Backend, focused: ProbeApp) -> None:
    text = "".join(chr(0x4E00 + i) for i in range(30)) + " " + UNICODE_TEXT
    x11.input.type_text(text)
    assert focused.wait_for_entry(text, timeout=30) == text


def test_typing_again_reuses_bindings(x11: Backend, focused: ProbeApp) -> None:
    x11.input.type_text(UNICODE_TEXT)
    x11.input.type_text(UNICODE_TEXT)
    assert focused.wait_for_entry(UNICODE_TEXT * 2) == UNICODE_TEXT * 2


def test_control_characters_are_refused(x11: Backend) -> None:
    with pytest.raises(Exception, match="control character U\\+0007"):
        x11.input.type_text("a\x07")


def test_close_releases_held_input_and_restores_the_keymap(xvfb: str, probe: ProbeApp) -> None:
    backend = open_backend("x11", display=xvfb)
    driver = _driver(backend)
    before = driver.keymap_rows()
    backend.input.move(*probe.widgets["canvas"].center)
    backend.input.key_down("shift")
    backend.input.key_down("ü")
    backend.input.mouse_down(MouseButton.LEFT)
    probe.wait_for_event("press", num=1)
    backend.close()
    probe.wait_for_event("release", num=1)
    probe.wait_for_event("keyup", keysym="Shift_L")
    check = open_backend("x11", display=xvfb)
    try:
        assert _driver(check).keymap_rows() == before
    finally:
        check.close()


def test_caps_lock_does_not_change_typed_text(x11: Backend, focused: ProbeApp) -> None:
    x11.input.key_chord(["capslock"])
    try:
        x11.input.type_text("Hello é")
        assert focused.wait_for_entry("Hello é") == "Hello é"
        x11.input.type_text("x")
        focused.wait_for_entry("Hello éx")
        # Still on afterwards: the key typed next sees Lock in its state.
        x11.input.key_chord(["a"])
        press = focused.wait_for_event("key", keysym="A")
        assert press["state"] & LOCK_MASK
    finally:
        x11.input.key_chord(["capslock"])
