"""Consent on a real headless KDE (KWin 5.27, xdg-desktop-portal-kde 5.27): nobody is asked.

xdg-desktop-portal 1.16 gives an unsandboxed caller an empty app id, and KDE's
portal 5.27 then starts a RemoteDesktop session without a dialog and tells the
person at the desk with a "Remote control session started" notification, read
here from the desktop's notification server (what plasmashell is on a real
Plasma; tests/platform/wayland/notification_server.py). This holds with or
without plasma-workspace's dialog modules installed: the dialog is never built.
So a non-interactive start must open, and `holodesk doctor` must say that
nothing is asked and what is shown instead. GNOME's dialog, which does ask, is
test_portal_mutter_consent.py's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.client.doctor.findings import Status
from holodesk.client.doctor.route import check_route
from holodesk.platform.wayland.consent import KDE_NOTIFIES, SNAP_ENV, remote_desktop_consent
from holodesk.platform.wayland.dbus import PortalBus
from holodesk.platform.wayland.portal import (
    ConsentNeededError,
    PortalUnavailableError,
    RemoteDesktopSession,
    ScreenCastSession,
)
from holodesk.platform.wayland.portal_route import portal_route_status
from holodesk.platform.wayland.tokens import TokenStore
from holodesk.platform.wlroots.route import wayland_route
from tests.platform.wayland.conftest import start_desktop
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.platform.wayland.kde_portal import open_kde_route
from tests.support.probe import read_json_lines

pytestmark = pytest.mark.portal_desktop

NOTIFIED_WITHIN_S = 10.0
# One of the QML modules KDE's dialogs import (plasma-workspace's), absent with tools/setup.sh's.
KDE_DIALOGS = Path("/usr/lib/x86_64-linux-gnu/qt5/qml/org/kde/plasma/workspace/dialogs")
STARTED = "Remote control session started"


@pytest.fixture(scope="module")
def desktop() -> Iterator[HeadlessDesktop]:
    running = start_desktop("kwin", screenshots_for_anyone=True)
    yield running
    running.stop()


def test_status_says_nobody_is_asked_and_what_kde_shows(
    desktop: HeadlessDesktop, tokens: TokenStore
) -> None:
    status = portal_route_status(desktop.bus_address, tokens, environ=desktop.environ())
    assert status.usable, status.problems
    assert (status.remote_desktop_version, status.persists) == (1, False)
    assert status.approval == ""
    assert status.notice == KDE_NOTIFIES


def test_doctor_says_nothing_is_approved_and_names_the_notification(
    desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    route = wayland_route(desktop.environ(), token_path=tmp_path / "tokens.json")
    assert route is not None
    assert (route.name, route.usable, route.asks) == ("portal", True, False)
    assert route.approval == KDE_NOTIFIES
    finding = check_route(None, desktop.environ())
    assert finding is not None
    assert finding.status is Status.OK, finding
    assert "'Remote control session started' notification" in finding.detail


def test_a_non_interactive_start_opens_and_the_person_is_notified(
    desktop: HeadlessDesktop, tokens: TokenStore
) -> None:
    """Proves: where KDE asks nobody, interactive=False does not refuse (on GNOME it
    does, before asking), the session gets both devices, and the person at the desk
    is told, with what the program can do."""
    before = len(read_json_lines(desktop.notification_log))
    backend = open_kde_route(desktop, tokens, interactive=False, environ=desktop.environ())
    try:
        deadline = time.monotonic() + NOTIFIED_WITHIN_S
        while not (shown := read_json_lines(desktop.notification_log)[before:]):
            assert time.monotonic() < deadline, "KDE's portal notified nobody"
            time.sleep(0.1)
        assert {(note["summary"], note["icon"]) for note in shown} == {(STARTED, "krfb")}
        assert " - Screens\n - Input devices" in shown[0]["body"], shown
    finally:
        backend.close()


@pytest.mark.parametrize("sandbox", ["flatpak", "snap"])
def test_a_sandboxed_caller_is_taken_to_be_asked(
    desktop: HeadlessDesktop, tmp_path: Path, sandbox: str
) -> None:
    # The portal gives a sandboxed app its id, and KDE then shows its dialog.
    info = tmp_path / ".flatpak-info"
    environ = desktop.environ()
    if sandbox == "flatpak":
        info.write_text("[Application]\nname=org.example.Agent\n")
    else:
        environ[SNAP_ENV] = "agent"
    bus = PortalBus(desktop.bus_address)
    try:
        assert remote_desktop_consent(bus, environ, flatpak_info=info).asks
    finally:
        bus.close()


def test_another_desktop_named_is_taken_to_ask(
    desktop: HeadlessDesktop, tokens: TokenStore
) -> None:
    # The portal picks its backend by XDG_CURRENT_DESKTOP: KDE's rule is KDE's only.
    environ = desktop.environ() | {"XDG_CURRENT_DESKTOP": "GNOME"}
    before = len(read_json_lines(desktop.notification_log))
    with pytest.raises(ConsentNeededError, match="asks for consent at every session"):
        RemoteDesktopSession.start(
            PortalBus(desktop.bus_address), tokens, interactive=False, environ=environ
        )
    time.sleep(1)  # a start that went ahead would have notified by now
    assert read_json_lines(desktop.notification_log)[before:] == []  # refused before Start


def test_kdes_screen_chooser_asks_everyone_and_a_dialog_it_cannot_show_is_said(
    desktop: HeadlessDesktop, tokens: TokenStore
) -> None:
    """Proves: a ScreenCast session alone (the uinput route's layout) is KDE's other
    path: its screen chooser asks every program. Where its dialog cannot load, KDE
    answers "cancelled" at once, and the error says that may be why, not only that
    someone refused."""
    bus = PortalBus(desktop.bus_address)
    try:
        if KDE_DIALOGS.exists():  # plasma-workspace installed: the dialog shows, unanswered
            with pytest.raises(PortalUnavailableError, match="nobody answered"):
                ScreenCastSession.monitors(bus, tokens, consent_timeout_s=3)
            return
        with pytest.raises(PortalUnavailableError) as refused:
            ScreenCastSession.monitors(bus, tokens, consent_timeout_s=30)
    finally:
        bus.close()
    cause, fix = refused.value.problem
    assert "or the desktop could not show its dialog" in cause
    assert "plasma-workspace" in fix
