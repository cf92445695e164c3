"""The keys of the vocabulary a page tells apart by `code` and `location`, and the
browser keys, which Chromium acts on as a keyboard's would (issue 16.5)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from holodesk.platform.errors import PlatformError
from holodesk.platform.web.backend import WebBackend
from tests.platform.web.support import events, wait_for

pytestmark = pytest.mark.web

# KeyboardEvent.location
STANDARD, LEFT, RIGHT, NUMPAD = 0, 1, 2, 3


def _downs(web: WebBackend) -> list[tuple[str, str, int]]:
    logged = events(web, "keydown")
    return [(e["key"], e["code"], e["keyCode"]) for e in logged]


def test_keypad_keys_are_the_numpad_keys(web: WebBackend) -> None:
    # The recorder logs no `location`: a listener of this test's own does.
    web.page.evaluate(
        "(() => { window.locations = [];"
        " window.addEventListener('keydown', (e) => window.locations.push(e.location)); })()"
    )
    web.page.evaluate("document.getElementById('field').focus()")
    for key in ("kp_7", "kp_decimal", "kp_enter", "7", "ctrl_r", "ctrl"):
        web.input.key_chord([key])
    wait_for(lambda: len(events(web, "keyup")) == 6, "six key releases")
    assert _downs(web) == [
        ("7", "Numpad7", 103),
        (".", "NumpadDecimal", 110),
        ("Enter", "NumpadEnter", 13),
        ("7", "Digit7", 55),  # the digit row's 7, for contrast
        ("Control", "ControlRight", 17),
        ("Control", "ControlLeft", 17),
    ]
    assert web.page.evaluate("window.locations") == [NUMPAD, NUMPAD, NUMPAD, STANDARD, RIGHT, LEFT]
    assert web.page.evaluate("document.getElementById('field').value") == "7.7"


def test_right_modifiers_hold_their_modifier(web: WebBackend) -> None:
    web.page.evaluate("document.getElementById('field').focus()")
    web.input.key_down("shift_r")
    web.input.key_down("shift_l")
    web.input.key_up("shift_l")  # Shift stays held: its right key is still down
    web.input.key_chord(["a"])
    web.input.key_up("shift_r")
    wait_for(lambda: len(events(web, "keyup")) == 3, "three key releases")
    downs = [(e["code"], e["shift"]) for e in events(web, "keydown")]
    assert downs == [("ShiftRight", True), ("ShiftLeft", True), ("KeyA", True)]
    assert web.page.evaluate("document.getElementById('field').value") == "A"


def test_media_keys_reach_the_page(web: WebBackend) -> None:
    for key in ("volume_mute", "media_play_pause", "media_next"):
        web.input.key_chord([key])
    wait_for(lambda: len(events(web, "keyup")) == 3, "three key releases")
    assert _downs(web) == [
        ("AudioVolumeMute", "AudioVolumeMute", 173),
        ("MediaPlayPause", "MediaPlayPause", 179),
        ("MediaTrackNext", "MediaTrackNext", 176),
    ]


def test_browser_keys_move_through_history(open_page: Callable[..., WebBackend]) -> None:
    web = open_page()
    navigator = web.navigator
    assert navigator is not None
    first = navigator.current_url()
    second = first.replace("events.html", "second.html")
    navigator.navigate(second)
    web.input.key_chord(["browser_back"])
    wait_for(lambda: navigator.current_url() == first, "Back to go back")
    web.input.key_chord(["browser_forward"])
    wait_for(lambda: navigator.current_url() == second, "Forward to go forward")
    web.page.evaluate("window.marker = 1")
    web.input.key_chord(["browser_refresh"])

    def reloaded() -> bool:
        try:
            return bool(web.page.evaluate("window.marker === undefined"))
        except PlatformError:  # mid-navigation: the old page's context is gone
            return False

    wait_for(reloaded, "Refresh to reload the page")
    assert navigator.current_url() == second
