"""XTEST input arriving in a real Tk app on Xvfb, as the app itself reports it.

The event-level checks every backend passes live in tests/platform/conformance.py;
here are the target for them and what only X11 has (temporary keymap bindings).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from holodesk.platform.base import Backend, MouseButton
from holodesk.platform.select import open_backend
from holodesk.platform.x11.input import X11Input
from tests.platform.conformance import UNICODE_TEXT, TkTarget, conformance_test
from tests.support.probe import LOCK_MASK, ProbeApp

pytestmark = pytest.mark.x11


@pytest.fixture
def target(xvfb: str, probe: ProbeApp) -> Iterator[TkTarget]:
    with TkTarget.open(lambda: open_backend("x11", display=xvfb), probe) as target:
        yield target


test_conformance = conformance_test()


def _driver(backend: Backend) -> X11Input:
    assert isinstance(backend.input, X11Input)
    return backend.input


@pytest.fixture
def focused(x11: Backend, probe: ProbeApp) -> ProbeApp:
    """The probe with keyboard focus in its Entry (clicked, like a user would)."""
    x11.input.click(*probe.widgets["entry"].center)
    probe.wait_for_event("focus", widget="entry")
    return probe


def test_type_unicode_text_binds_keys_then_restores_the_keymap(
    x11: Backend, focused: ProbeApp
) -> None:
    driver = _driver(x11)
    before = driver.keymap_rows()
    x11.input.type_text(UNICODE_TEXT)
    assert focused.wait_for_entry(UNICODE_TEXT) == UNICODE_TEXT
    assert driver.keymap_rows() != before  # bindings linger for slow clients...
    driver.restore_keymap()
    assert driver.keymap_rows() == before  # ...and are undone afterwards


def test_keymap_is_restored_by_itself(x11: Backend, focused: ProbeApp) -> None:
    driver = _driver(x11)
    before = driver.keymap_rows()
    x11.input.type_text("€")
    focused.wait_for_entry("€")
    focused.wait_for(lambda _: driver.keymap_rows() == before, timeout=10)


def test_more_distinct_characters_than_spare_keycodes(x11: Backend, focused: ProbeApp) -> None:
    text = "".join(chr(0x4E00 + i) for i in range(30)) + " " + UNICODE_TEXT
    x11.input.type_text(text)
    assert focused.wait_for_entry(text, timeout=30) == text


def test_typing_again_reuses_bindings(x11: Backend, focused: ProbeApp) -> None:
    x11.input.type_text(UNICODE_TEXT)
    x11.input.type_text(UNICODE_TEXT)
    assert focused.wait_for_entry(UNICODE_TEXT * 2) == UNICODE_TEXT * 2


def test_close_releases_held_input_and_restores_the_keymap(xvfb: str, probe: ProbeApp) -> None:
    backend = open_backend("x11", display=xvfb)
    driver = _driver(backend)
    before = driver.keymap_rows()
    backend.input.move(*probe.widgets["canvas"].center)
    backend.input.key_down("shift")
    backend.input.key_down("ü")
    backend.input.mouse_down(MouseButton.LEFT)
    probe.wait_for_event("press", num=1)
    backend.close()
    probe.wait_for_event("release", num=1)
    probe.wait_for_event("keyup", keysym="Shift_L")
    check = open_backend("x11", display=xvfb)
    try:
        assert _driver(check).keymap_rows() == before
    finally:
        check.close()


def test_caps_lock_does_not_change_typed_text(x11: Backend, focused: ProbeApp) -> None:
    x11.input.key_chord(["capslock"])
    try:
        x11.input.type_text("Hello é")
        assert focused.wait_for_entry("Hello é") == "Hello é"
        x11.input.type_text("x")
        focused.wait_for_entry("Hello éx")
        # Still on afterwards: the key typed next sees Lock in its state.
        x11.input.key_chord(["a"])
        press = focused.wait_for_event("key", keysym="A")
        assert press["state"] & LOCK_MASK
    finally:
        x11.input.key_chord(["capslock"])
