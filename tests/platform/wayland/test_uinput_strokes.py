"""The uinput route types with the desktop's own layout: keycodes from its keymap.

Real keymaps compiled by libxkbcommon from xkeyboard-config (as a compositor
compiles its keyboard settings), and the fake evdev devices of fake_uinput.py
(no /dev/uinput here) recording what the route writes. The keymap read from a
real compositor is test_portal_kwin_layout.py's.
"""

from __future__ import annotations

import pytest
from evdev import ecodes

from holodesk.platform.base import Region
from holodesk.platform.errors import InputError
from holodesk.platform.wayland.uinput import KEYBOARD_NAME, UinputInput
from holodesk.platform.wayland.uinput_strokes import KeymapStrokes, Stroke
from holodesk.platform.wayland.xkb import XkbKeymap
from tests.platform.wayland.fake_uinput import Event, FakeDevices

KEY = ecodes.EV_KEY
SHIFT, ALTGR = ecodes.KEY_LEFTSHIFT, ecodes.KEY_RIGHTALT


def strokes(layout: str) -> KeymapStrokes:
    keymap = XkbKeymap.from_names(layout)
    return KeymapStrokes(lambda: keymap)


def german(devices: FakeDevices) -> UinputInput:
    return UinputInput(
        Region(0, 0, 1920, 1080), factory=devices, device_settle_s=0, strokes=lambda: strokes("de")
    )


def keyboard(devices: FakeDevices) -> list[list[Event]]:
    return devices.named(KEYBOARD_NAME).reports()


def test_a_german_layout_gets_its_own_keys() -> None:
    found = strokes("de").strokes("yzZß€@ä")
    assert found["y"] == Stroke(ecodes.KEY_Z)  # QWERTZ: the keys of y and z swap
    assert found["z"] == Stroke(ecodes.KEY_Y)
    assert found["Z"] == Stroke(ecodes.KEY_Y, (SHIFT,))
    assert found["ß"] == Stroke(ecodes.KEY_MINUS)
    assert found["€"] == Stroke(ecodes.KEY_E, (ALTGR,))  # AltGr: ISO_Level3_Shift there
    assert found["@"] == Stroke(ecodes.KEY_Q, (ALTGR,))
    assert found["ä"] == Stroke(ecodes.KEY_APOSTROPHE)


def test_the_us_layout_keeps_the_old_strokes() -> None:
    found = strokes("us").strokes("aA<~")
    assert found["a"] == Stroke(ecodes.KEY_A)
    assert found["A"] == Stroke(ecodes.KEY_A, (SHIFT,))
    assert found["<"] == Stroke(ecodes.KEY_COMMA, (SHIFT,))  # not pc105's extra key
    assert found["~"] == Stroke(ecodes.KEY_GRAVE, (SHIFT,))


def test_what_the_layout_lacks_is_refused_naming_it() -> None:
    with pytest.raises(InputError) as raised:
        strokes("de").strokes("café 日")
    message = str(raised.value)
    assert "its active layout (German); that layout has no key (one X11 apps receive) for: " in (
        message
    ), message
    assert "for: 'é' (U+00E9), '日' (U+65E5). Nothing of this input was sent." in message


def test_with_several_layouts_a_stroke_must_type_the_character_in_each() -> None:
    both = strokes("us,ru")
    assert both.strokes("1 ") == {"1": Stroke(ecodes.KEY_1), " ": Stroke(ecodes.KEY_SPACE)}
    with pytest.raises(InputError, match=r"which of its layouts \(English \(US\), Russian\)"):
        both.strokes("a")


def test_the_driver_types_text_with_the_layouts_keys() -> None:
    devices = FakeDevices()
    driver = german(devices)
    driver.type_text("zy€")
    assert keyboard(devices) == [
        [(KEY, ecodes.KEY_Y, 1)],
        [(KEY, ecodes.KEY_Y, 0)],
        [(KEY, ecodes.KEY_Z, 1)],
        [(KEY, ecodes.KEY_Z, 0)],
        [(KEY, ALTGR, 1)],
        [(KEY, ecodes.KEY_E, 1)],
        [(KEY, ecodes.KEY_E, 0)],
        [(KEY, ALTGR, 0)],
    ]


def test_a_refused_text_sends_nothing_and_a_held_character_its_modifiers() -> None:
    devices = FakeDevices()
    driver = german(devices)
    with pytest.raises(InputError, match="'é'"):
        driver.type_text("zé")
    assert keyboard(devices) == []
    driver.key_down("€")
    driver.key_up("€")
    assert keyboard(devices) == [
        [(KEY, ALTGR, 1)],
        [(KEY, ecodes.KEY_E, 1)],
        [(KEY, ecodes.KEY_E, 0)],
        [(KEY, ALTGR, 0)],
    ]


def test_the_keyboard_declares_every_key_a_layout_may_need() -> None:
    devices = FakeDevices()
    german(devices)
    declared = set(devices.named(KEYBOARD_NAME).capabilities_requested[KEY])
    assert {ecodes.KEY_102ND, ecodes.KEY_RIGHTALT, ecodes.KEY_Y} <= declared
    assert max(declared) == 247  # X11's last keycode, 255, less xkb's 8
