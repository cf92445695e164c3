"""Key names normalise onto the contract's vocabulary (protos/holodesk/v1/action.proto)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from holodesk.platform.errors import UnknownKeyError
from holodesk.platform.keys import CANONICAL_KEYS, MODIFIERS, NAMED_KEYS, normalize_key

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
