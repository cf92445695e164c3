"""Typing beyond the conformance suite on a real sway: more distinct characters than
the keymap has spare keys (so keys are rebound and the keymap uploaded again midway)."""

from __future__ import annotations

import pytest

from tests.platform.conformance import TkTarget

pytestmark = pytest.mark.wlroots


def test_more_characters_than_spare_keys_type_in_order(target: TkTarget) -> None:
    """Proves: 300 distinct CJK characters (the keymap has ~120 spare keys) type
    exactly, in order: a rebound key never types its previous character."""
    text = "".join(chr(code) for code in range(0x4E00, 0x4E00 + 300))
    try:
        target.focus("line")
    except TimeoutError:  # the focusing click lost (test_wlroots_conformance): once more
        target.focus("line")
    target.backend.input.type_text(text)
    assert target.wait_text("line", text, timeout_s=60) == text
