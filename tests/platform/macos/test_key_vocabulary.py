"""The contract's whole key vocabulary on macOS (issue 16.5): the keypad's own key
codes (with the numeric-pad flag a real keypad sets), the right-hand modifiers, and
a clear refusal for media and browser keys, which have no key code on a Mac.

FakeQuartzApi (tests/platform/macos/fake_api.py) records every event posted.
"""

from __future__ import annotations

import pytest

from holodesk.platform.base import Backend
from holodesk.platform.errors import InputError
from holodesk.platform.macos import cg
from holodesk.platform.macos.api import KeyEvent
from holodesk.platform.macos.keycodes import NAMED_KEYCODES
from holodesk.values.keys import BROWSER_KEYS, MEDIA_KEYS, VOCABULARY
from tests.platform.macos.fake_api import FakeQuartzApi

F_PAD, F_SHIFT, F_CTRL = cg.FLAG_NUMERIC_PAD, cg.FLAG_SHIFT, cg.FLAG_CONTROL


def keys(api: FakeQuartzApi) -> list[tuple[int, bool, int, str]]:
    return [(e.keycode, e.down, e.flags, e.text) for e in api.events if isinstance(e, KeyEvent)]


def test_the_vocabulary_has_key_codes_but_media_browser_and_f21_on() -> None:
    missing = set(VOCABULARY) - set(NAMED_KEYCODES)
    assert missing == {*MEDIA_KEYS, *BROWSER_KEYS, "f21", "f22", "f23", "f24"}


@pytest.mark.parametrize(
    ("name", "keycode"),
    [
        ("kp_0", 0x52),
        ("kp_1", 0x53),
        ("kp_7", 0x59),
        ("kp_8", 0x5B),  # kVK_ANSI_Keypad8 skips 0x5A (F20)
        ("kp_9", 0x5C),
        ("kp_enter", 0x4C),
        ("kp_add", 0x45),
        ("kp_subtract", 0x4E),
        ("kp_multiply", 0x43),
        ("kp_divide", 0x4B),
        ("kp_decimal", 0x41),
    ],
)
def test_keypad_keys_post_the_keypad_key_codes(
    backend: Backend, api: FakeQuartzApi, name: str, keycode: int
) -> None:
    backend.input.key_chord([name])
    assert keys(api) == [(keycode, True, F_PAD, ""), (keycode, False, F_PAD, "")]


@pytest.mark.parametrize(
    ("name", "keycode", "flag"),
    [
        ("ctrl_r", 0x3E, cg.FLAG_CONTROL),
        ("shift_r", 0x3C, cg.FLAG_SHIFT),
        ("alt_r", 0x3D, cg.FLAG_ALTERNATE),
        ("meta_r", 0x36, cg.FLAG_COMMAND),
        ("ctrl_l", 0x3B, cg.FLAG_CONTROL),
        ("meta_l", 0x37, cg.FLAG_COMMAND),
    ],
)
def test_sided_modifiers_post_their_side_and_set_the_modifier_flag(
    backend: Backend, api: FakeQuartzApi, name: str, keycode: int, flag: int
) -> None:
    backend.input.key_down(name)
    backend.input.key_up(name)
    assert keys(api) == [(keycode, True, flag, ""), (keycode, False, 0, "")]


def test_a_modifier_stays_set_while_its_other_side_is_held(
    backend: Backend, api: FakeQuartzApi
) -> None:
    backend.input.key_down("shift_l")
    backend.input.key_down("shift_r")
    backend.input.key_up("shift_l")
    backend.input.key_chord(["a"])  # an "A": no Shift pressed for it, the flag still set
    backend.input.key_up("shift_r")
    assert keys(api) == [
        (0x38, True, F_SHIFT, ""),
        (0x3C, True, F_SHIFT, ""),
        (0x38, False, F_SHIFT, ""),
        (0x00, True, F_SHIFT, ""),
        (0x00, False, F_SHIFT, ""),
        (0x3C, False, 0, ""),
    ]


@pytest.mark.parametrize("name", [*MEDIA_KEYS, *BROWSER_KEYS])
def test_media_and_browser_keys_are_refused_clearly(
    backend: Backend, api: FakeQuartzApi, name: str
) -> None:
    with pytest.raises(InputError, match=f"macOS backend cannot send '{name}'"):
        backend.input.key_chord(["ctrl_r", name])
    assert backend.input.held() == ((), ())
    # ctrl_r went down before the refusal and came back up: nothing is left held.
    assert keys(api) == [(0x3E, True, F_CTRL, ""), (0x3E, False, 0, "")]


def test_format_characters_are_typed_as_text(backend: Backend, api: FakeQuartzApi) -> None:
    text = "a\u200db\u200cc\u200ed\u200fe\U000e0041"
    backend.input.type_text(text)
    assert "".join(t for _, down, _, t in keys(api) if down) == text
