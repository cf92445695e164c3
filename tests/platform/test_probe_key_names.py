"""The probe's key oracle: a key Tk could not name is named from the server's keymap."""

from __future__ import annotations

import sys

import pytest

from tests.support.probe import server_key_names

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 is Linux-only here"),
]


def test_a_key_tk_calls_unknown_is_named_from_the_servers_keymap(xvfb: str) -> None:
    """What Xvnc does to a keysym its keymap lacks (map it onto a spare keycode as the
    key arrives), done by hand: Tk's stale copy says "??", the server says XF86Stop."""
    from Xlib import XK
    from Xlib.display import Display

    XK.load_keysym_group("xf86")
    display = Display(xvfb)
    first = display.display.info.min_keycode
    count = display.display.info.max_keycode - first + 1
    mapping = display.get_keyboard_mapping(first, count)
    spare = next(first + i for i, syms in enumerate(mapping) if not any(syms))
    before = mapping[spare - first]
    try:
        display.change_keyboard_mapping(spare, [[XK.string_to_keysym("XF86_Stop")] * 2])
        display.sync()
        events = [
            {"type": "key", "keysym": "??", "keycode": spare, "char": ""},
            {"type": "key", "keysym": "a", "keycode": 38, "char": "a"},
        ]
        named = server_key_names(events, xvfb)
    finally:
        display.change_keyboard_mapping(spare, [list(before)])
        display.sync()
        display.close()
    assert [e["keysym"] for e in named] == ["XF86Stop", "a"]
