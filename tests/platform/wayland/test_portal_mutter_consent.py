"""Consent on a real headless GNOME: the dialog answered, refused, left alone; restore tokens.

Debian 12's xdg-desktop-portal 1.16 offers RemoteDesktop version 1, which takes
no persist_mode: a remote desktop session asks at every start, and holodesk
says so (ConsentNeededError, up front when it cannot ask). ScreenCast is
version 4 there and does keep consent: its restore token is tested here, the
second session starting with no dialog at all.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.client.doctor.findings import Status
from holodesk.client.doctor.route import check_route
from holodesk.platform.base import Region
from holodesk.platform.select import default_backend_name, open_backend
from holodesk.platform.wayland.dbus import PortalBus
from holodesk.platform.wayland.portal import (
    ConsentNeededError,
    PortalUnavailableError,
    RemoteDesktopSession,
    ScreenCastSession,
)
from holodesk.platform.wayland.portal_route import portal_route_status
from holodesk.platform.wayland.tokens import REMOTE_DESKTOP, SCREENCAST, TokenStore
from holodesk.platform.wlroots.route import wayland_route
from tests.platform.wayland.conftest import start_desktop
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.platform.wayland.gnome_person import GnomePerson, allowing

pytestmark = pytest.mark.portal_desktop


@pytest.fixture(scope="module")
def desktop() -> Iterator[HeadlessDesktop]:
    running = start_desktop("mutter")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def person(desktop: HeadlessDesktop) -> Iterator[GnomePerson]:
    someone = GnomePerson(desktop)
    yield someone
    someone.close()


def test_status_says_a_person_approves_every_start(
    desktop: HeadlessDesktop, tokens: TokenStore
) -> None:
    status = portal_route_status(desktop.bus_address, tokens)
    assert status.usable, status.problems
    assert (status.remote_desktop_version, status.screencast_version) == (1, 4)
    assert not status.persists
    assert "at every start" in status.approval
    assert "allow remote interaction, then Share" in status.approval


def test_doctor_names_the_portal_route_and_its_dialog_at_every_start(
    desktop: HeadlessDesktop, person: GnomePerson, tokens: TokenStore
) -> None:
    """Proves: `holodesk doctor` on GNOME without XWayland's DISPLAY takes the portal
    route (mutter has none of the wlroots protocols), names its interface versions
    and the PipeWire frames, and says the dialog comes at every start, as a warning;
    asking shows no dialog."""
    environ = {k: v for k, v in desktop.environ().items() if k != "DISPLAY"}
    route = wayland_route(environ, token_path=tokens.path)
    assert route is not None
    assert (route.name, route.backend, route.usable, route.asks) == (
        "portal",
        "wayland",
        True,
        True,
    )
    assert "lacks zwlr_screencopy_manager_v1" in route.why
    assert "RemoteDesktop version 1 (keyboard and pointer) and ScreenCast version 4" in route.why
    assert "frames from the session's PipeWire stream" in route.why
    assert "at every start" in route.approval
    assert "allow remote interaction, then Share" in route.approval
    finding = check_route(None, environ)
    assert finding is not None
    assert finding.status is Status.WARN
    assert finding.detail.startswith("portal (the wayland backend): ")
    assert "at every start" in finding.fix
    assert person.find_share_button() is None  # a status check shows no dialog


def test_with_xwaylands_display_too_the_choice_is_the_portal_route(
    desktop: HeadlessDesktop,
    person: GnomePerson,
    tokens: TokenStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Proves: in mutter's whole session environment, XWayland's DISPLAY included, the
    backend chosen is wayland (mutter offers none of the wlroots protocols; x11 would
    reach X11 apps only), the doctor says the portal route and that XWayland is not
    used, and open_backend() with no name opens that route: the person allows it and
    the display and a frame come from the session's PipeWire stream."""
    environ = desktop.environ()
    assert environ["DISPLAY"] == desktop.x_display
    assert default_backend_name("linux", environ) == "wayland"
    route = wayland_route(environ, token_path=tokens.path)
    assert route is not None
    assert (route.name, route.backend, route.usable) == ("portal", "wayland", True)
    assert f"XWayland at DISPLAY={desktop.x_display} is not used" in route.why
    for name in ("HOLODESK_PLATFORM_BACKEND", "HOLODESK_WAYLAND_INPUT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    finding = check_route(None, os.environ)
    assert finding is not None
    assert finding.detail.startswith("portal (the wayland backend): ")
    backend = allowing(
        person,
        tmp_path / "dialog.png",
        lambda: open_backend(token_path=tokens.path, consent_timeout_s=120),
    )
    try:
        assert backend.name == "wayland"
        (display,) = backend.screen.displays()
        assert display.bounds == Region(0, 0, desktop.width, desktop.height)
        frame = backend.screen.grab(Region(0, 0, 64, 64))
        assert frame.size == (64, 64)
    finally:
        backend.close()


def test_non_interactive_refuses_before_asking(
    desktop: HeadlessDesktop, person: GnomePerson, tokens: TokenStore
) -> None:
    with pytest.raises(ConsentNeededError, match="asks for consent at every session") as caught:
        RemoteDesktopSession.start(PortalBus(desktop.bus_address), tokens, interactive=False)
    assert not caught.value.persists
    assert "Share" in caught.value.fix
    assert person.find_share_button() is None  # refused before any dialog


def test_nobody_answering_is_consent_needed(
    desktop: HeadlessDesktop, person: GnomePerson, tokens: TokenStore
) -> None:
    with pytest.raises(ConsentNeededError, match="nobody answered") as caught:
        RemoteDesktopSession.start(PortalBus(desktop.bus_address), tokens, consent_timeout_s=3)
    assert "allow remote control in the dialog" in caught.value.fix
    # The request is closed when we stop waiting, and the dialog with it.
    person.wait_until_no_dialog()


def test_cancel_is_a_refusal(
    desktop: HeadlessDesktop, person: GnomePerson, tokens: TokenStore, tmp_path: Path
) -> None:
    thread = threading.Thread(target=person.cancel, kwargs={"evidence": tmp_path / "dialog.png"})
    thread.start()
    try:
        with pytest.raises(PortalUnavailableError, match="did not allow remote control") as caught:
            RemoteDesktopSession.start(PortalBus(desktop.bus_address), tokens, consent_timeout_s=30)
    finally:
        thread.join()
    assert not isinstance(caught.value, ConsentNeededError)
    assert tokens.get(REMOTE_DESKTOP) is None


def test_screencast_restore_token_skips_the_dialog(
    desktop: HeadlessDesktop, person: GnomePerson, tokens: TokenStore, tmp_path: Path
) -> None:
    bus = PortalBus(desktop.bus_address)
    try:
        thread = threading.Thread(
            target=person.share_screen, kwargs={"evidence": tmp_path / "dialog.png"}
        )
        thread.start()
        try:
            first = ScreenCastSession.monitors(bus, tokens, consent_timeout_s=30)
        finally:
            thread.join()
        token = tokens.get(SCREENCAST)
        assert token
        person.wait_until_no_dialog()
        # Nobody answers now: a dialog would time out (PortalUnavailableError), not return.
        second = ScreenCastSession.monitors(bus, tokens, consent_timeout_s=10)
    finally:
        bus.close()
    assert first == second
    assert first is not None
    assert [(m.x, m.y, m.width, m.height) for m in first] == [(0, 0, desktop.width, desktop.height)]
    # Kept for the next run (xdg-desktop-portal 1.16 hands the same token back; the
    # spec lets a portal renew it at each start, and TokenStore keeps whichever comes).
    assert tokens.get(SCREENCAST) == token
