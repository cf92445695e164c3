"""Portal input arriving in a real Tk app, as the app itself reports it.

The wayland backend talks to a stand-in portal over a private session bus; the
stand-in replays the calls on Xvfb through XTest (it stands in for a compositor,
which cannot run here). The event-level checks every backend passes live in
tests/platform/conformance.py; here are the target for them and what only the
portal route has: smooth scrolling, keysyms for any character, the session's
end on close. Consent, tokens, HiDPI monitors and a session closed by the
desktop are in test_wayland_portal_session.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from holodesk.platform.base import MouseButton
from tests.platform.conformance import (
    SCROLLS,
    TkTarget,
    check_scroll,
    check_types,
    conformance_test,
)
from tests.platform.wayland.conftest import OpenWayland
from tests.support.portal import PortalStandin
from tests.support.probe import ProbeApp

pytestmark = pytest.mark.x11


@pytest.fixture
def target(open_wayland: OpenWayland, probe: ProbeApp) -> Iterator[TkTarget]:
    with TkTarget.open(open_wayland, probe) as target:
        yield target


test_conformance = conformance_test()


@pytest.mark.parametrize(("dx", "dy"), SCROLLS.values(), ids=SCROLLS.keys())
def test_smooth_scroll(
    open_wayland: OpenWayland, shared_portal: PortalStandin, probe: ProbeApp, dx: int, dy: int
) -> None:
    # Pixels (NotifyPointerAxis) instead of notches: the app still sees whole notches.
    gestures = len(shared_portal.calls("RemoteDesktop.NotifyPointerAxis"))
    with TkTarget.open(lambda: open_wayland(scroll="smooth"), probe) as target:
        check_scroll(target, dx, dy)
    assert len(shared_portal.calls("RemoteDesktop.NotifyPointerAxis")) == gestures + 1


def test_any_character_goes_as_its_keysym(target: TkTarget, shared_portal: PortalStandin) -> None:
    # Beyond the BMP too, where the compositor makes a key for each keysym, as the stand-in
    # does (KWin 6 too); GNOME's and KDE 5's refusals are test_portal_keysyms.py's.
    text = "héllo wörld ñ € 日本 😀"
    check_types(target, "line", text, text)
    keysyms = {c["args"][2] for c in shared_portal.calls("RemoteDesktop.NotifyKeyboardKeysym")}
    assert {0x01000000 + ord(c) for c in "€日本😀"} <= keysyms  # X11's Unicode keysyms
    assert {ord(c) for c in "éöñ"} <= keysyms  # Latin-1: the code point itself


def test_lines_keep_their_indentation(target: TkTarget) -> None:
    text = "first line\n  indented — ünïcode\r\n\tlast"
    check_types(target, "lines", text, text.replace("\r\n", "\n"))


def test_close_releases_held_input_and_ends_the_session(
    open_wayland: OpenWayland, shared_portal: PortalStandin, probe: ProbeApp
) -> None:
    closes = len(shared_portal.calls("Session.Close"))
    backend = open_wayland()
    backend.input.move(*probe.widgets["canvas"].center)
    backend.input.key_down("shift")
    backend.input.mouse_down(MouseButton.LEFT)
    probe.wait_for_event("press", num=1)
    backend.close()
    probe.wait_for_event("release", num=1)
    probe.wait_for_event("keyup", keysym="Shift_L")
    assert len(shared_portal.calls("Session.Close")) == closes + 1
