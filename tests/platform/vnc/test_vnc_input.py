"""RFB input arriving in a real Tk app on TigerVNC's Xvnc, as the app itself reports it."""

from __future__ import annotations

from pathlib import Path

import pytest

from holodesk.platform.base import Backend, MouseButton
from holodesk.platform.errors import InputError
from holodesk.platform.select import open_backend
from holodesk.platform.vnc.keys import TIGERVNC_SPARE_KEYCODES
from tests.platform.vnc.servers import VncServer, xvnc
from tests.support.probe import (
    BUTTON1_MASK,
    CONTROL_MASK,
    MOD1_MASK,
    MOD4_MASK,
    SHIFT_MASK,
    Event,
    ProbeApp,
    wheel_notches,
)

pytestmark = pytest.mark.vnc

UNICODE_TEXT = "héllo wörld ñ € 日本"
SHELL_HOSTILE = "rm -rf / && echo $HOME `id` \"q\" 'z' ; | > < * ? ~ \\ ! %s {x}"


def _presses(probe: ProbeApp, num: int) -> list[Event]:
    return [e for e in probe.events("press") if e["num"] == num]


@pytest.fixture
def focused(vnc: Backend, probe: ProbeApp) -> ProbeApp:
    """The probe with keyboard focus in its Entry (clicked, like a user would)."""
    vnc.input.click(*probe.widgets["entry"].center)
    probe.wait_for_event("focus", widget="entry")
    return probe


@pytest.mark.parametrize("count", [1, 2, 3])
def test_click_counts(vnc: Backend, probe: ProbeApp, count: int) -> None:
    x, y = probe.widgets["canvas"].center
    vnc.input.click(x, y, count=count)
    probe.wait_for(lambda _: len(probe.events("release")) == count)
    presses = _presses(probe, 1)
    assert len(presses) == count
    assert {(p["x_root"], p["y_root"], p["widget"]) for p in presses} == {(x, y, "canvas")}
    assert [m["count"] for m in probe.events("multi")] == list(range(2, count + 1))


def test_click_invokes_the_button(vnc: Backend, probe: ProbeApp) -> None:
    vnc.input.click(*probe.widgets["ok"].center)
    assert probe.wait_for_event("command", widget="ok")


@pytest.mark.parametrize(
    ("button", "number"), [(MouseButton.LEFT, 1), (MouseButton.MIDDLE, 2), (MouseButton.RIGHT, 3)]
)
def test_buttons(vnc: Backend, probe: ProbeApp, button: MouseButton, number: int) -> None:
    x, y = probe.widgets["canvas"].center
    vnc.input.click(x, y, button=button)
    release = probe.wait_for_event("release", num=number)
    assert (release["x_root"], release["y_root"]) == (x, y)
    assert [p["num"] for p in probe.events("press")] == [number]


@pytest.mark.parametrize(
    ("modifier", "mask"),
    [("ctrl", CONTROL_MASK), ("shift", SHIFT_MASK), ("alt", MOD1_MASK), ("meta", MOD4_MASK)],
)
def test_click_with_modifier_held(vnc: Backend, probe: ProbeApp, modifier: str, mask: int) -> None:
    x, y = probe.widgets["canvas"].center
    vnc.input.click(x, y, modifiers=[modifier])
    vnc.input.click(x + 10, y)
    probe.wait_for(lambda _: len(probe.events("release")) == 2)
    with_modifier, without = _presses(probe, 1)
    assert with_modifier["state"] & mask
    assert not without["state"] & mask
    assert vnc.input.held() == ((), ())


def test_two_modifiers_at_once(vnc: Backend, probe: ProbeApp) -> None:
    vnc.input.click(*probe.widgets["canvas"].center, modifiers=["ctrl", "shift"])
    press = probe.wait_for_event("press", num=1)
    assert press["state"] & (CONTROL_MASK | SHIFT_MASK) == CONTROL_MASK | SHIFT_MASK


def test_move_reaches_the_app_and_is_tracked(vnc: Backend, probe: ProbeApp) -> None:
    canvas = probe.widgets["canvas"]
    x, y = canvas.x + 17, canvas.y + 23
    vnc.input.move(x, y)
    motion = probe.wait_for_event("motion", x_root=x, y_root=y)
    assert motion["widget"] == "canvas"
    assert vnc.input.cursor_position() == (x, y)


def test_move_off_the_framebuffer_is_refused(vnc: Backend) -> None:
    with pytest.raises(ValueError, match="outside the remote 1280x800 framebuffer"):
        vnc.input.move(1280, 10)


def test_mouse_down_and_up(vnc: Backend, probe: ProbeApp) -> None:
    x, y = probe.widgets["canvas"].center
    vnc.input.move(x, y)
    vnc.input.mouse_down(MouseButton.LEFT)
    probe.wait_for_event("press", num=1)
    assert vnc.input.held() == ((), (MouseButton.LEFT,))
    assert probe.events("release") == []
    vnc.input.move(x + 30, y + 5)
    vnc.input.mouse_up(MouseButton.LEFT)
    release = probe.wait_for_event("release", num=1)
    assert (release["x_root"], release["y_root"]) == (x + 30, y + 5)
    assert vnc.input.held() == ((), ())


def test_drag_along_a_path(vnc: Backend, probe: ProbeApp) -> None:
    canvas = probe.widgets["canvas"]
    path = [(canvas.x + 20 + 40 * i, canvas.y + 30 + 25 * i) for i in range(6)]
    vnc.input.drag(path, duration_s=0.1)
    release = probe.wait_for_event("release", num=1)
    press = probe.events("press")[0]
    assert (press["x_root"], press["y_root"]) == path[0]
    assert (release["x_root"], release["y_root"]) == path[-1]
    held_motions = [
        (m["x_root"], m["y_root"]) for m in probe.events("motion") if m["state"] & BUTTON1_MASK
    ]
    assert held_motions == path[1:]


def test_a_button_held_across_moves_stays_held(vnc: Backend, probe: ProbeApp) -> None:
    # RFB sends the whole button mask with every move: a held button must stay in it.
    x, y = probe.widgets["canvas"].center
    vnc.input.move(x, y)
    vnc.input.mouse_down(MouseButton.RIGHT)
    vnc.input.move(x + 5, y)
    vnc.input.click(x + 10, y)  # left click while right is held
    vnc.input.mouse_up(MouseButton.RIGHT)
    release = probe.wait_for_event("release", num=3)
    assert (release["x_root"], release["y_root"]) == (x + 10, y)
    assert [(e["type"], e["num"]) for e in probe.events() if e["type"] in ("press", "release")] == [
        ("press", 3),
        ("press", 1),
        ("release", 1),
        ("release", 3),
    ]


@pytest.mark.parametrize(("dx", "dy"), [(0, 3), (0, -2), (2, 0), (-1, 0), (1, -1)], ids=str)
def test_scroll_in_every_direction(vnc: Backend, probe: ProbeApp, dx: int, dy: int) -> None:
    x, y = probe.widgets["canvas"].center
    vnc.input.scroll(x, y, dx, dy)
    expected = [(0, 1 if dy > 0 else -1)] * abs(dy) + [(1 if dx > 0 else -1, 0)] * abs(dx)
    probe.wait_for(lambda events: len(wheel_notches(events)) == len(expected))
    assert wheel_notches(probe.events()) == expected


def test_key_chord_holds_modifiers_and_releases_in_reverse(vnc: Backend, focused: ProbeApp) -> None:
    vnc.input.key_chord(["ctrl", "a"])
    focused.wait_for_event("keyup", keysym="Control_L")
    keys = [(e["type"], e["keysym"]) for e in focused.events() if e["type"] in ("key", "keyup")]
    assert keys == [("key", "Control_L"), ("key", "a"), ("keyup", "a"), ("keyup", "Control_L")]
    assert focused.events("key")[1]["state"] & CONTROL_MASK
    assert focused.entry_text() == ""


def test_named_keys_edit_the_entry(vnc: Backend, focused: ProbeApp) -> None:
    vnc.input.type_text("abc")
    focused.wait_for_entry("abc")
    vnc.input.key_chord(["left"])
    vnc.input.type_text("X")
    assert focused.wait_for_entry("abXc") == "abXc"
    vnc.input.key_chord(["home"])
    vnc.input.key_chord(["delete"])
    vnc.input.key_chord(["end"])
    vnc.input.key_chord(["BackSpace"])
    assert focused.wait_for_entry("bX") == "bX"


def test_key_down_and_up(vnc: Backend, focused: ProbeApp) -> None:
    vnc.input.key_down("shift")
    vnc.input.key_down("a")
    focused.wait_for_event("key", keysym="A")
    assert vnc.input.held() == (("shift", "a"), ())
    vnc.input.key_up("a")
    vnc.input.key_up("shift")
    focused.wait_for_event("keyup", keysym="Shift_L")
    assert focused.entry_text() == "A"
    assert vnc.input.held() == ((), ())


def test_held_character_beyond_the_keyboard(vnc: Backend, focused: ProbeApp) -> None:
    vnc.input.key_down("ß")
    vnc.input.key_up("ß")
    assert focused.wait_for_entry("ß") == "ß"


def test_type_text_with_shifted_ascii(vnc: Backend, focused: ProbeApp) -> None:
    text = "Hello, World! ~ 1+1=2 (ok) {x} <a|b> \"q\" 'z' #$%^&*_?:@"
    vnc.input.type_text(text)
    assert focused.wait_for_entry(text) == text


def test_shell_hostile_text_arrives_verbatim(vnc: Backend, focused: ProbeApp) -> None:
    vnc.input.type_text(SHELL_HOSTILE)
    assert focused.wait_for_entry(SHELL_HOSTILE) == SHELL_HOSTILE


def test_type_unicode_text_arrives_intact(vnc: Backend, focused: ProbeApp) -> None:
    # Xvnc binds each keysym its keyboard lacks to a spare keycode.
    vnc.input.type_text(UNICODE_TEXT)
    assert focused.wait_for_entry(UNICODE_TEXT) == UNICODE_TEXT
    keysyms = [e["keysym"] for e in focused.events("key")]
    assert {"eacute", "odiaeresis", "ntilde", "U20AC", "U65E5", "U672C"} <= set(keysyms)


def test_tigervnc_binds_its_spare_keycodes_then_refuses_clearly(tmp_path: Path) -> None:
    # A fresh server: Xvnc keeps every binding for life, so this counts from zero.
    with xvnc(640, 480) as server:
        probe = ProbeApp.start(server.display, tmp_path / "probe.log")
        backend = open_backend("vnc", **server.options())
        try:
            backend.input.click(*probe.widgets["entry"].center)
            probe.wait_for_event("focus", widget="entry")
            spare = "".join(chr(0x4E00 + i) for i in range(TIGERVNC_SPARE_KEYCODES))
            backend.input.type_text(spare)
            assert probe.wait_for_entry(spare, timeout=30) == spare
            with pytest.raises(InputError) as refused:
                backend.input.type_text("ok 本")
            message = str(refused.value)
            assert "'本' (U+672C)" in message
            assert f"127.0.0.1:{server.port}" in message
            assert "TigerVNC" in message
            # Nothing of the refused text was sent; bound characters still type.
            backend.input.type_text(spare[::-1])
            assert probe.wait_for_entry(spare + spare[::-1]) == spare + spare[::-1]
        finally:
            backend.close()
            probe.stop()


def test_multiline_text_presses_enter(vnc: Backend, focused: ProbeApp) -> None:
    vnc.input.type_text("one\ntwo")
    focused.wait_for_event("key", keysym="Return")
    # A one-line Entry ignores Return: the lines join, and nothing is lost.
    assert focused.wait_for_entry("onetwo") == "onetwo"


def test_control_characters_are_refused(vnc: Backend) -> None:
    with pytest.raises(InputError, match="control character U\\+0007"):
        vnc.input.type_text("a\x07")


def test_close_releases_held_input(xvnc_server: VncServer, probe: ProbeApp) -> None:
    backend = open_backend("vnc", **xvnc_server.options())
    backend.input.move(*probe.widgets["canvas"].center)
    backend.input.key_down("shift")
    backend.input.mouse_down(MouseButton.LEFT)
    probe.wait_for_event("press", num=1)
    backend.close()
    probe.wait_for_event("release", num=1)
    probe.wait_for_event("keyup", keysym="Shift_L")
