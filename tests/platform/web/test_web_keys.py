"""The contract's keys as DevTools key definitions (pure logic, no browser)."""

from __future__ import annotations

import pytest

from holodesk.platform.web.keys import NAMED_DEFINITIONS, KeyDefinition, key_definition
from holodesk.values.keys import CANONICAL_KEYS


def test_every_canonical_key_has_a_definition() -> None:
    assert set(NAMED_DEFINITIONS) == set(CANONICAL_KEYS)
    assert key_definition("f24") == KeyDefinition("F24", "F24", 135)


@pytest.mark.parametrize(
    ("key", "shift", "expected"),
    [
        ("a", False, KeyDefinition("a", "KeyA", 65, "a")),
        ("a", True, KeyDefinition("A", "KeyA", 65, "A")),
        ("A", False, KeyDefinition("A", "KeyA", 65, "A")),
        ("1", True, KeyDefinition("!", "Digit1", 49, "!")),
        ("?", False, KeyDefinition("?", "Slash", 191, "?")),
        ("é", True, KeyDefinition("é", "", 0, "é")),
        ("enter", False, KeyDefinition("Enter", "Enter", 13, "\r")),
        ("space", True, KeyDefinition(" ", "Space", 32, " ")),
        ("ctrl", False, KeyDefinition("Control", "ControlLeft", 17, location=1)),
    ],
)
def test_key_definitions(key: str, shift: bool, expected: KeyDefinition) -> None:
    assert key_definition(key, shift_held=shift) == expected


def test_names_outside_the_vocabulary_are_refused() -> None:
    with pytest.raises(ValueError, match="canonical"):
        key_definition("Return")
