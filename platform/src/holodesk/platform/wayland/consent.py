"""Whether the desktop will ask a person before a RemoteDesktop session starts.

Most portal backends show a dialog at Start (GNOME's "Remote desktop", Plasma 6's
"Remote control requested"). xdg-desktop-portal-kde 5.27 does not ask a program
that runs outside a sandbox: the portal passes it an empty app id, and KDE then
only shows a "Remote control session started" notification, since such a
program can take over the desktop without a portal anyway (Plasma 5.27's
remotedesktop.cpp; Plasma 6 asks everyone, and keeps the answer). Knowing this
keeps `interactive=False` from refusing a session nobody would be asked about,
and lets `holodesk doctor` say what the person at the desk will see.

Which backend serves RemoteDesktop is the portal's choice by XDG_CURRENT_DESKTOP
(xdg-desktop-portal 1.16 takes the first backend whose UseIn names a desktop in
it), so the rule holds when that names KDE and KDE's backend, at its
RemoteDesktop version 1, is on the bus. Plasma before 5.27 asked everyone and
also reports version 1; on one, a non-interactive start waits for the dialog
and ends with ConsentNeededError, as on GNOME.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from holodesk.platform.errors import PlatformError
from holodesk.platform.wayland.dbus import PORTAL_PATH, PROPERTIES_INTERFACE, PortalBus, unwrap

KDE_BACKEND = "org.freedesktop.impl.portal.desktop.kde"
KDE_REMOTE_DESKTOP = "org.freedesktop.impl.portal.RemoteDesktop"
# Where a Flatpak sandbox says so; a snap's environment names it.
FLATPAK_INFO = Path("/.flatpak-info")
SNAP_ENV = "SNAP_NAME"

KDE_NOTIFIES = (
    "nothing: KDE Plasma 5.27's portal asks no dialog of a program outside a sandbox; it "
    "shows the person a 'Remote control session started' notification (Screens, Input "
    "devices) at every start"
)


@dataclass(frozen=True)
class Consent:
    """How the desktop answers a RemoteDesktop Start from this process.

    `asks`: a dialog is shown (unless a restore token is honoured). `notice`:
    when it is not, what the person is shown instead, in the doctor's words.
    """

    asks: bool
    notice: str = ""


ASKS = Consent(asks=True)


def remote_desktop_consent(
    bus: PortalBus, environ: Mapping[str, str] | None = None, *, flatpak_info: Path = FLATPAK_INFO
) -> Consent:
    """Whether starting a RemoteDesktop session on `bus` shows this process a dialog.

    `environ` (default this process's) names the desktop. Asks the bus only (no
    activation): a backend it cannot ask is taken to ask.
    """
    env = os.environ if environ is None else environ
    if sandboxed(env, flatpak_info):
        return ASKS
    if kde_remote_desktop_version(bus, env) != 1:
        return ASKS  # not KDE's, or Plasma 6: a dialog for everyone, with "Allow restoring"
    return Consent(asks=False, notice=KDE_NOTIFIES)


def kde_remote_desktop_version(bus: PortalBus, environ: Mapping[str, str]) -> int | None:
    """The RemoteDesktop version of xdg-desktop-portal-kde when it is the one serving
    RemoteDesktop here (`environ` names KDE and it is on the bus), else None.

    Version 1 is Plasma 5.27 (and older), 2 Plasma 6. Asks the bus only (no
    activation); a backend it cannot ask counts as absent.
    """
    if not _names_kde(environ):
        return None
    try:
        if not bus.has_owner(KDE_BACKEND):
            return None
        # A backend serves its interfaces at the portal's own path.
        (version,) = bus.call(
            PROPERTIES_INTERFACE,
            "Get",
            "ss",
            (KDE_REMOTE_DESKTOP, "version"),
            destination=KDE_BACKEND,
            path=PORTAL_PATH,
        )
    except PlatformError:
        return None
    return int(unwrap(version))


def sandboxed(environ: Mapping[str, str], flatpak_info: Path = FLATPAK_INFO) -> bool:
    """Whether this process runs in a Flatpak or snap, whose app id the portal knows."""
    return flatpak_info.exists() or bool(environ.get(SNAP_ENV))


def _names_kde(environ: Mapping[str, str]) -> bool:
    desktops = environ.get("XDG_CURRENT_DESKTOP", "")
    return "kde" in (name.strip().lower() for name in desktops.split(":"))
