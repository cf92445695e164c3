"""Typing beyond the conformance suite on a real sway: more distinct characters than
the keymap has spare keys (so keys are rebound and the keymap uploaded again midway),
into the native Wayland app."""

from __future__ import annotations

import pytest

from tests.platform.wlroots.gtk_target import GtkTarget

pytestmark = pytest.mark.wlroots


def test_more_characters_than_spare_keys_type_in_order(native_target: GtkTarget) -> None:
    """Proves: 300 distinct CJK characters (the keymap has ~120 spare keys) type
    exactly, in order: a rebound key never types its previous character."""
    text = "".join(chr(code) for code in range(0x4E00, 0x4E00 + 300))
    native_target.focus("line")
    native_target.backend.input.type_text(text)
    assert native_target.wait_text("line", text, timeout_s=60) == text
