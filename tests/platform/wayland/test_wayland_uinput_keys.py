"""The uinput route's keys for the whole vocabulary (issue 16.5): keypad, left/right
modifiers, media and browser keys are the keyboard's own evdev codes, declared
by the virtual keyboard so the compositor accepts them. Against the fake evdev
devices of tests/platform/wayland/fake_uinput.py (no /dev/uinput here)."""

from __future__ import annotations

import pytest
from evdev import ecodes

from holodesk.platform.base import Region
from holodesk.platform.wayland.keycodes import NAMED_KEYCODES
from holodesk.platform.wayland.uinput import KEYBOARD_NAME, UinputInput
from holodesk.values.keys import VOCABULARY
from tests.platform.wayland.fake_uinput import Event, FakeDevices

KEY = ecodes.EV_KEY
DESKTOP = Region(0, 0, 1920, 1080)


@pytest.fixture
def devices() -> FakeDevices:
    return FakeDevices()


@pytest.fixture
def driver(devices: FakeDevices) -> UinputInput:
    return UinputInput(DESKTOP, factory=devices, device_settle_s=0)


def _keyboard(devices: FakeDevices) -> list[list[Event]]:
    return devices.named(KEYBOARD_NAME).reports()


def test_every_key_of_the_vocabulary_is_declared(driver: UinputInput, devices: FakeDevices) -> None:
    declared = set(devices.named(KEYBOARD_NAME).capabilities_requested[KEY])
    assert {NAMED_KEYCODES[name] for name in VOCABULARY} <= declared


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("kp_0", ecodes.KEY_KP0),
        ("kp_9", ecodes.KEY_KP9),
        ("kp_enter", ecodes.KEY_KPENTER),
        ("kp_add", ecodes.KEY_KPPLUS),
        ("kp_subtract", ecodes.KEY_KPMINUS),
        ("kp_multiply", ecodes.KEY_KPASTERISK),
        ("kp_divide", ecodes.KEY_KPSLASH),
        ("kp_decimal", ecodes.KEY_KPDOT),
        ("ctrl_r", ecodes.KEY_RIGHTCTRL),
        ("shift_r", ecodes.KEY_RIGHTSHIFT),
        ("alt_r", ecodes.KEY_RIGHTALT),
        ("meta_r", ecodes.KEY_RIGHTMETA),
        ("volume_mute", ecodes.KEY_MUTE),
        ("media_play_pause", ecodes.KEY_PLAYPAUSE),
        ("media_previous", ecodes.KEY_PREVIOUSSONG),
        ("browser_back", ecodes.KEY_BACK),
        ("browser_home", ecodes.KEY_HOMEPAGE),
    ],
)
def test_named_keys_are_their_evdev_codes(
    driver: UinputInput, devices: FakeDevices, name: str, code: int
) -> None:
    driver.key_chord([name])
    assert _keyboard(devices) == [[(KEY, code, 1)], [(KEY, code, 0)]]


def test_a_right_shift_held_makes_capitals_without_another_shift(
    driver: UinputInput, devices: FakeDevices
) -> None:
    driver.key_chord(["shift_r", "A"])
    right, a = ecodes.KEY_RIGHTSHIFT, ecodes.KEY_A
    assert _keyboard(devices) == [
        [(KEY, right, 1)],
        [(KEY, a, 1)],
        [(KEY, a, 0)],
        [(KEY, right, 0)],
    ]
