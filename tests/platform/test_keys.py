"""Key names normalise onto the contract's vocabulary (protos/holodesk/v1/action.proto)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from holodesk.platform.errors import UnknownKeyError
from holodesk.platform.keys import holds, is_modifier, normalize_key, side_neutral
from holodesk.proto.limits import KEY_CHARS
from holodesk.values.keys import (
    BROWSER_KEYS,
    CANONICAL_KEYS,
    KEYPAD_KEYS,
    MEDIA_KEYS,
    MODIFIERS,
    NAMED_KEYS,
    SIDED_MODIFIERS,
    VOCABULARY,
)

ACTION_PROTO = Path(__file__).resolve().parents[2] / "protos" / "holodesk" / "v1" / "action.proto"

ALIASES = {
    "Control": "ctrl",
    "CTRL": "ctrl",
    "ctl": "ctrl",
    "Shift": "shift",
    "Alt": "alt",
    "option": "alt",
    "cmd": "meta",
    "Command": "meta",
    "super": "meta",
    "Win": "meta",
    "windows": "meta",
    "Return": "enter",
    "esc": "escape",
    "Escape": "escape",
    "PgUp": "pageup",
    "page_up": "pageup",
    "Page Down": "pagedown",
    "pgdn": "pagedown",
    "ArrowUp": "up",
    "arrow_left": "left",
    "Del": "delete",
    "BackSpace": "backspace",
    "Caps_Lock": "capslock",
    "PrtSc": "printscreen",
    "apps": "menu",
    "F1": "f1",
    "F24": "f24",
    "spacebar": "space",
    " ": "space",
    "\n": "enter",
    "\t": "tab",
    "a": "a",
    "A": "A",
    "é": "é",
    "e\u0301": "é",  # decomposed é composes to one character
    "日": "日",
    "/": "/",
    # The keypad, as DOM codes, X keysyms and evdev names spell it.
    "Numpad0": "kp_0",
    "KP_7": "kp_7",
    "kp-9": "kp_9",
    "NumpadEnter": "kp_enter",
    "KP_Enter": "kp_enter",
    "NumpadAdd": "kp_add",
    "KP_Plus": "kp_add",
    "NumpadSubtract": "kp_subtract",
    "kpminus": "kp_subtract",
    "NumpadMultiply": "kp_multiply",
    "KP_Asterisk": "kp_multiply",
    "NumpadDivide": "kp_divide",
    "NumpadDecimal": "kp_decimal",
    "KP_Dot": "kp_decimal",
    # Left/right modifiers.
    "ControlLeft": "ctrl_l",
    "ControlRight": "ctrl_r",
    "Control_R": "ctrl_r",
    "rctrl": "ctrl_r",
    "RightCtrl": "ctrl_r",
    "ShiftRight": "shift_r",
    "lshift": "shift_l",
    "AltRight": "alt_r",
    "ralt": "alt_r",
    "right option": "alt_r",
    "MetaLeft": "meta_l",
    "lwin": "meta_l",
    "RWin": "meta_r",
    "Super_R": "meta_r",
    "right cmd": "meta_r",
    # Media and browser keys.
    "AudioVolumeMute": "volume_mute",
    "mute": "volume_mute",
    "VolumeUp": "volume_up",
    "XF86AudioLowerVolume": "volume_down",
    "XF86AudioPlay": "media_play_pause",
    "XF86Back": "browser_back",
    "XF86HomePage": "browser_home",
    "MediaPlayPause": "media_play_pause",
    "MediaTrackNext": "media_next",
    "media_prev_track": "media_previous",
    "MediaStop": "media_stop",
    "BrowserBack": "browser_back",
    "browser-forward": "browser_forward",
    "BrowserRefresh": "browser_refresh",
    "BrowserHome": "browser_home",
    "BrowserFavorites": "browser_favorites",
    # Format characters are keys like other characters; control characters are not.
    "\u200d": "\u200d",
    "\u200e": "\u200e",
}


@pytest.mark.parametrize(("name", "canonical"), ALIASES.items())
def test_aliases_normalise(name: str, canonical: str) -> None:
    assert normalize_key(name) == canonical


@pytest.mark.parametrize("name", sorted(CANONICAL_KEYS))
def test_canonical_names_are_fixed_points(name: str) -> None:
    assert normalize_key(name) == name


def test_vocabulary_matches_the_contract() -> None:
    assert MODIFIERS == ("ctrl", "shift", "alt", "meta")
    assert {"enter", "tab", "space", "printscreen", "menu", "f1", "f24"} <= set(NAMED_KEYS)
    assert "f25" not in CANONICAL_KEYS
    assert set(KEYPAD_KEYS) == {
        *(f"kp_{n}" for n in range(10)),
        *("kp_enter", "kp_add", "kp_subtract", "kp_multiply", "kp_divide", "kp_decimal"),
    }
    assert set(SIDED_MODIFIERS) == {f"{m}_{side}" for m in MODIFIERS for side in "lr"}
    assert len(VOCABULARY) == len(CANONICAL_KEYS)  # no name twice


def test_the_contract_comment_names_every_key() -> None:
    # action.proto's header lists the vocabulary; runs like "f1" ... "f24" stand for theirs.
    header = ACTION_PROTO.read_text().split("enum MouseButton")[0]
    quoted = set(re.findall(r'"([a-z0-9_]+)"', header))
    runs = {f"f{n}" for n in range(1, 25)} | {f"kp_{n}" for n in range(10)}
    assert set(VOCABULARY) - runs <= quoted
    assert {"f1", "f24", "kp_0", "kp_9"} <= quoted


@pytest.mark.parametrize("name", VOCABULARY)
def test_every_name_fits_the_contracts_key_limit(name: str) -> None:
    assert len(name) <= KEY_CHARS


def test_sided_modifiers_count_as_their_modifier() -> None:
    assert [side_neutral(k) for k in ("ctrl_l", "ctrl_r", "alt_r", "meta_l", "shift_r")] == [
        "ctrl", "ctrl", "alt", "meta", "shift",
    ]  # fmt: skip
    assert side_neutral("kp_0") == "kp_0"
    assert all(is_modifier(k) for k in (*MODIFIERS, *SIDED_MODIFIERS))
    assert not any(is_modifier(k) for k in (*KEYPAD_KEYS, *MEDIA_KEYS, *BROWSER_KEYS, "a"))
    assert holds(["a", "shift_r"], "shift")
    assert not holds(["ctrl_r"], "shift")


@pytest.mark.parametrize("name", ["", "hyper", "f25", "ctrl+a", "ab", "\x00", "\x07"])
def test_unknown_names_raise_naming_the_key(name: str) -> None:
    with pytest.raises(UnknownKeyError) as raised:
        normalize_key(name)
    assert raised.value.key == name
    assert "f1..f24" in str(raised.value)


@given(st.sampled_from(sorted(CANONICAL_KEYS)), st.data())
def test_any_spelling_of_a_named_key_normalises(name: str, data: st.DataObject) -> None:
    # Random case plus separators where a person might put them.
    cased = "".join(c.upper() if data.draw(st.booleans()) else c for c in name)
    separator = data.draw(st.sampled_from(["", "_", "-", " "]))
    spelled = cased if len(cased) < 2 else cased[0] + separator + cased[1:]
    assert normalize_key(spelled) == name


@given(st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zs")))
def test_any_printable_character_is_its_own_key(char: str) -> None:
    assert normalize_key(char) == char


@given(st.text(min_size=1, max_size=12))
def test_normalising_is_idempotent(name: str) -> None:
    try:
        canonical = normalize_key(name)
    except UnknownKeyError:
        return
    assert normalize_key(canonical) == canonical
