"""Typing plans: runs of text, keys for line breaks, chunks that never split a character."""

from __future__ import annotations

import pytest

from holodesk.platform.errors import InputError
from holodesk.platform.text import (
    KeyPress,
    TextRun,
    chunk_utf16,
    plan_text,
    utf16_length,
    utf16_units,
)


def test_plan_splits_text_around_keys() -> None:
    assert plan_text("a\r\nb\n\tc\x1b\b\x7f") == [
        TextRun("a"),
        KeyPress("enter"),  # "\r\n" is one Enter
        TextRun("b"),
        KeyPress("enter"),
        KeyPress("tab"),
        TextRun("c"),
        KeyPress("escape"),
        KeyPress("backspace"),
        KeyPress("delete"),
    ]
    assert plan_text("\r\r") == [KeyPress("enter"), KeyPress("enter")]
    assert plan_text("") == []


def test_format_characters_are_text_but_controls_and_lone_surrogates_are_refused() -> None:
    assert plan_text("👨\u200d👩") == [TextRun("👨\u200d👩")]  # ZWJ (Cf) is typable
    with pytest.raises(InputError, match="control character U\\+0000"):
        plan_text("a\x00")
    with pytest.raises(InputError, match="lone surrogate U\\+D800"):
        plan_text("a\ud800")


def test_utf16_units_of_a_surrogate_pair() -> None:
    assert utf16_units("a😀") == [0x61, 0xD83D, 0xDE00]
    assert utf16_length("a😀é") == 4


@pytest.mark.parametrize(
    "text",
    [
        "x" * 45,
        "😀" * 15,
        "a" + "😀" * 10,
        "e\u0301" * 12,  # e + combining acute
        "👍🏽" * 7,
        "🇫🇷🇩🇪🇯🇵🇺🇸🇧🇷🇨🇦",  # flags: pairs of regional indicators
        "👩\u200d👩\u200d👧\u200d👦" * 3,  # 11 units each
        "mixed é 😀 👍🏽 text " * 5,
    ],
)
def test_chunks_respect_the_limit_and_keep_everything(text: str) -> None:
    for limit in (2, 3, 7, 20):
        chunks = chunk_utf16(text, limit)
        assert "".join(chunks) == text
        for chunk in chunks:
            assert 0 < utf16_length(chunk) <= limit
            # A chunk never starts with a low surrogate half or ends with a high one.
            units = utf16_units(chunk)
            assert not 0xDC00 <= units[0] <= 0xDFFF
            assert not 0xD800 <= units[-1] <= 0xDBFF


def test_chunks_cut_between_user_perceived_characters_when_they_fit() -> None:
    assert chunk_utf16("e\u0301" * 3, 4) == ["e\u0301e\u0301", "e\u0301"]
    assert chunk_utf16("👍🏽👍🏽", 6) == ["👍🏽", "👍🏽"]
    assert chunk_utf16("🇫🇷🇩🇪", 6) == ["🇫🇷", "🇩🇪"]
    family = "👩\u200d👩\u200d👧\u200d👦"
    assert chunk_utf16("a" + family, 11) == ["a", family]
    # A cluster longer than the limit is cut between code points.
    assert chunk_utf16(family, 4) == ["👩\u200d", "👩\u200d", "👧\u200d", "👦"]


def test_a_chunk_must_hold_a_surrogate_pair() -> None:
    with pytest.raises(ValueError, match="at least one surrogate pair"):
        chunk_utf16("abc", 1)
