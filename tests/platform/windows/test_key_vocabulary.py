"""Every key of the contract's vocabulary reaches SendInput as the key a keyboard
would send (issue 16.5): the keypad's own virtual keys, the left/right modifiers,
media and browser keys, with the extended flag exactly where Windows wants it.

FakeWinApi (tests/platform/windows/fake_api.py) records each INPUT.
"""

from __future__ import annotations

import pytest

from holodesk.platform.base import Backend
from holodesk.platform.windows.vkeys import NAMED_VKS
from holodesk.values.keys import VOCABULARY
from tests.platform.windows.fake_api import FakeWinApi, describe

ZWJ, ZWNJ, LRM, RLM = 0x200D, 0x200C, 0x200E, 0x200F


def presses(api: FakeWinApi) -> list[tuple[object, object]]:
    """(virtual key, "extended" or "") of each key-down sent."""
    return [(e[1], e[4]) for e in map(describe, api.sent) if e[3] == "down"]


def test_every_key_of_the_vocabulary_has_a_virtual_key() -> None:
    assert set(VOCABULARY) <= set(NAMED_VKS)


@pytest.mark.parametrize(
    ("name", "vk", "extended"),
    [
        *((f"kp_{n}", 0x60 + n, "") for n in range(10)),  # VK_NUMPAD0..9
        ("kp_multiply", 0x6A, ""),
        ("kp_add", 0x6B, ""),
        ("kp_subtract", 0x6D, ""),
        ("kp_decimal", 0x6E, ""),
        ("kp_divide", 0x6F, "extended"),
        ("kp_enter", 0x0D, "extended"),  # Enter on the keypad: VK_RETURN, extended
        ("ctrl_l", 0xA2, ""),
        ("ctrl_r", 0xA3, "extended"),
        ("shift_l", 0xA0, ""),
        ("shift_r", 0xA1, ""),  # the right Shift has no E0 prefix
        ("alt_l", 0xA4, ""),
        ("alt_r", 0xA5, "extended"),
        ("meta_l", 0x5B, "extended"),
        ("meta_r", 0x5C, "extended"),
        ("browser_back", 0xA6, "extended"),
        ("browser_home", 0xAC, "extended"),
        ("volume_mute", 0xAD, "extended"),
        ("volume_up", 0xAF, "extended"),
        ("media_next", 0xB0, "extended"),
        ("media_previous", 0xB1, "extended"),
        ("media_play_pause", 0xB3, "extended"),
    ],
)
def test_named_keys_send_their_virtual_key(
    backend: Backend, api: FakeWinApi, name: str, vk: int, extended: str
) -> None:
    backend.input.key_chord([name])
    assert [(e[1], e[3], e[4]) for e in map(describe, api.sent)] == [
        (vk, "down", extended),
        (vk, "up", extended),
    ]


def test_enter_is_not_the_keypad_enter(backend: Backend, api: FakeWinApi) -> None:
    backend.input.key_chord(["enter"])
    backend.input.key_chord(["kp_enter"])
    assert presses(api) == [(0x0D, ""), (0x0D, "extended")]


def test_a_right_shift_held_makes_capitals_without_another_shift(
    backend: Backend, api: FakeWinApi
) -> None:
    backend.input.key_chord(["shift_r", "A"])
    assert presses(api) == [(0xA1, ""), (0x41, "")]


def test_format_characters_go_as_unicode_units(backend: Backend, api: FakeWinApi) -> None:
    backend.input.type_text("a\u200db\u200c\u200e\u200f\U000e0041")
    downs = [e[1] for e in map(describe, api.sent) if e[0] == "unicode" and e[2] == "down"]
    assert downs == [ord("a"), ZWJ, ord("b"), ZWNJ, LRM, RLM, 0xDB40, 0xDC41]  # a surrogate pair
