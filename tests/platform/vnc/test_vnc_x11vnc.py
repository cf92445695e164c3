"""The same backend against x11vnc: a VNC server attached to an X display that already runs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.platform.base import Backend, MouseButton, Region
from holodesk.platform.errors import InputError
from holodesk.platform.select import open_backend
from tests.platform.conformance import (
    FORMAT_TEXT,
    TkTarget,
    _keys,
    check_caps_lock_leaves_typed_text_alone,
    check_sided_modifiers,
    check_types,
)
from tests.platform.vnc.servers import VncServer, solid_colour, x11vnc
from tests.support.probe import CONTROL_MASK, ProbeApp, wheel_notches

pytestmark = pytest.mark.vnc

TEXT = "Héllo wörld ñ € 日本 $HOME"
ORANGE = (255, 128, 0)  # the probe's swatch
GUARD_S = 10.0


@pytest.fixture(scope="module")
def server() -> Iterator[VncServer]:
    with x11vnc(1024, 768) as running:
        yield running


@pytest.fixture
def backend(server: VncServer) -> Iterator[Backend]:
    opened = open_backend("vnc", **server.options())
    yield opened
    opened.close()


@pytest.fixture
def app(server: VncServer, tmp_path: Path) -> Iterator[ProbeApp]:
    probe = ProbeApp.start(server.display, tmp_path / "probe.log")
    yield probe
    probe.stop()


def test_pointer_events_arrive(backend: Backend, app: ProbeApp) -> None:
    x, y = app.widgets["canvas"].center
    backend.input.click(x, y, count=2, modifiers=["ctrl"])
    backend.input.click(x, y, button=MouseButton.RIGHT)
    # Vertical only: x11vnc 0.9.16 drops the horizontal wheel (buttons 6 and 7).
    backend.input.scroll(x, y, 0, -1)
    backend.input.scroll(x, y, 0, 2)
    app.wait_for(lambda events: len(wheel_notches(events)) == 3)
    presses = [e for e in app.events("press") if e["num"] in (1, 3)]
    assert [(p["num"], p["x_root"], p["y_root"]) for p in presses] == [
        (1, x, y),
        (1, x, y),
        (3, x, y),
    ]
    assert presses[0]["state"] & CONTROL_MASK
    assert wheel_notches(app.events()) == [(0, -1), (0, 1), (0, 1)]


def test_unicode_text_arrives(backend: Backend, app: ProbeApp) -> None:
    # x11vnc binds keysyms its keyboard lacks (-add_keysyms, its default).
    backend.input.click(*app.widgets["entry"].center)
    app.wait_for_event("focus", widget="entry")
    backend.input.type_text(TEXT)
    assert app.wait_for_entry(TEXT) == TEXT


def test_format_characters_arrive(backend: Backend, app: ProbeApp) -> None:
    # ZWJ, ZWNJ, LRM, RLM and a tag character are text, bound like any keysym.
    check_types(TkTarget(backend, app), "line", FORMAT_TEXT, FORMAT_TEXT)


def test_keypad_keys_with_keys_of_their_own_arrive(backend: Backend, app: ProbeApp) -> None:
    target = TkTarget(backend, app)
    target.focus("line")
    for key in ("kp_add", "kp_subtract", "kp_multiply", "kp_divide", "kp_enter"):
        backend.input.key_chord([key])
    assert target.wait_text("line", "+-*/") == "+-*/"
    target.wait(lambda: ("up", "kp_enter") in _keys(target), "kp_enter to be released")
    assert [key for kind, key in _keys(target) if kind == "down"] == [
        "kp_add", "kp_subtract", "kp_multiply", "kp_divide", "kp_enter",
    ]  # fmt: skip


@pytest.mark.parametrize("key", ["kp_0", "kp_7", "kp_decimal"])
def test_keypad_digits_are_refused_not_typed_as_cursor_keys(
    backend: Backend, app: ProbeApp, key: str
) -> None:
    # x11vnc presses KP_Insert's key for KP_0 with Num Lock as it is: KP_Insert arrives.
    target = TkTarget(backend, app)
    target.focus("line")
    with pytest.raises(InputError, match=f"cannot type the keypad key '{key}' as itself"):
        backend.input.key_chord([key])
    assert backend.input.held() == ((), ())
    backend.input.type_text("1")
    assert target.wait_text("line", "1") == "1"
    assert [key for kind, key in _keys(target) if kind == "down"] == ["1"]  # nothing else sent


def test_caps_lock_leaves_typed_text_alone(backend: Backend, app: ProbeApp) -> None:
    check_caps_lock_leaves_typed_text_alone(TkTarget(backend, app))


def test_sided_modifiers_arrive(backend: Backend, app: ProbeApp) -> None:
    check_sided_modifiers(TkTarget(backend, app))


def test_capture(backend: Backend, app: ProbeApp) -> None:
    assert backend.screen.displays()[0].bounds == Region(0, 0, 1024, 768)
    swatch = app.widgets["swatch"]
    region = Region(swatch.x, swatch.y, swatch.width, swatch.height)
    # x11vnc finds changes by scanning the X screen, so a window mapped just now
    # reaches its framebuffer on a later scan (run alone, this test came first).
    deadline = time.monotonic() + GUARD_S
    colour = solid_colour(backend.screen.grab(region))
    while colour != ORANGE and time.monotonic() < deadline:
        time.sleep(0.05)
        colour = solid_colour(backend.screen.grab(region))
    assert colour == ORANGE
