"""Finding the JSON object in a model's text, reasoning tags and all."""

from __future__ import annotations

import pytest

from holodesk.daemon.dialects.base import DialectParseError
from holodesk.daemon.dialects.jsontext import extract_object


@pytest.mark.parametrize("tag", ["</think>", "</THINK>", "<think>", "<think>x</think>"])
def test_an_object_whose_strings_hold_reasoning_tags_is_read_whole(tag: str) -> None:
    """A schema-constrained answer is one object, and its strings may say anything
    (hypothesis found a thought of '</THINK>' cut in two)."""
    text = f'{{"thought": "{tag}", "action": {{"action": "wait"}}}}'
    assert extract_object(text) == {"thought": tag, "action": {"action": "wait"}}


def test_reasoning_around_the_object_is_still_stripped() -> None:
    text = '<think>first {"not": "this"}</think>\n{"thought": "ok"}'
    assert extract_object(text) == {"thought": "ok"}
    assert extract_object('planning...</think>```json\n{"a": 1}\n```') == {"a": 1}


def test_text_with_no_object_is_refused() -> None:
    with pytest.raises(DialectParseError, match="no JSON object"):
        extract_object("<think>{</think> nothing here")
