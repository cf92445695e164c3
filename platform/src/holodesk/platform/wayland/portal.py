"""xdg-desktop-portal RemoteDesktop and ScreenCast sessions (input, monitor geometry).

A RemoteDesktop session: CreateSession, SelectDevices (keyboard + pointer,
persist_mode=2 with the stored restore token), ScreenCast.SelectSources on the
same session (monitors, several allowed) so pointer motion has streams to be
absolute in, then Start, which shows the consent dialog (skipped when the
restore token is honoured) and returns the streams' geometry, the devices
granted and the next restore token.

The streams are PipeWire video nodes: their position and size are the layout
and the coordinate space of NotifyPointerMotionAbsolute, and their frames are
read through OpenPipeWireRemote (`holodesk.platform.wayland.pipewire`).

Consent: RemoteDesktop version 2 (xdg-desktop-portal >= 1.17) takes persist_mode
and returns a restore token, so the dialog comes once; version 1 (Debian 12's
1.16, with GNOME 43 or Plasma 5.27) cannot persist, and every session asks
again. KDE Plasma 5.27 asks no dialog of an unsandboxed program at all; it
notifies (`consent`). `interactive=False` refuses up front, with
ConsentNeededError, whenever the dialog would have to be answered, instead of
waiting for nobody.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping
from typing import Any

from jeepney import MatchRule, Message  # type: ignore[import-untyped]

from holodesk.platform.errors import InputError, PlatformError
from holodesk.platform.wayland.consent import remote_desktop_consent
from holodesk.platform.wayland.dbus import (
    PORTAL_NAME,
    SESSION_INTERFACE,
    BusUnavailableError,
    DBusCallError,
    Options,
    PortalBus,
    RequestEndedError,
    RequestTimeoutError,
    unwrap,
)
from holodesk.platform.wayland.layout import SOURCE_MONITOR, Monitor, monitors_from_streams
from holodesk.platform.wayland.tokens import REMOTE_DESKTOP, SCREENCAST, TokenStore

log = logging.getLogger(__name__)

REMOTE_DESKTOP_INTERFACE = "org.freedesktop.portal.RemoteDesktop"
SCREENCAST_INTERFACE = "org.freedesktop.portal.ScreenCast"
SCREENSHOT_INTERFACE = "org.freedesktop.portal.Screenshot"

DEVICE_KEYBOARD = 1
DEVICE_POINTER = 2
PERSIST_UNTIL_REVOKED = 2
AXIS_VERTICAL = 0
AXIS_HORIZONTAL = 1

DEFAULT_CONSENT_TIMEOUT_S = 300.0
LAYOUT = "reading the monitor layout"

Problem = tuple[str, str]

PORTAL_MISSING_FIX = (
    "install xdg-desktop-portal and the portal backend of your compositor "
    "(GNOME: xdg-desktop-portal-gnome; KDE Plasma: xdg-desktop-portal-kde; sway and other "
    "wlroots compositors: xdg-desktop-portal-wlr; Hyprland: xdg-desktop-portal-hyprland), "
    "and run holodesk inside the graphical session so it shares that session's D-Bus"
)
NO_BUS_FIX = (
    "run holodesk inside the graphical session (a systemd --user service or the desktop's "
    "autostart inherits the session bus), or export DBUS_SESSION_BUS_ADDRESS from it"
)
REMOTE_DESKTOP_MISSING_FIX = (
    "GNOME and KDE Plasma offer RemoteDesktop; wlroots compositors (xdg-desktop-portal-wlr, "
    "-hyprland) do not: there, use the uinput route (HOLODESK_WAYLAND_INPUT=uinput, which needs "
    "write access to /dev/uinput), or serve the desktop with wayvnc and use the vnc backend "
    "(HOLODESK_PLATFORM_BACKEND=vnc)"
)


NO_DIALOG_FIX = (
    "if no dialog appeared, the portal backend could not show one: see its log "
    "(xdg-desktop-portal-kde's dialogs need plasma-workspace and Kirigami)"
)


def consent_fix(what: str) -> str:
    return (
        f"run again and allow {what} in the dialog the desktop shows (GNOME: 'Share' with "
        "'Allow Remote Interaction' on; KDE: 'Share'); holodesk keeps the portal's restore "
        "token, so the question comes once"
    )


def problem_for(error: PlatformError, what: str) -> Problem:
    """(cause, fix) for a failure while setting up `what` through the portal."""
    if isinstance(error, RequestTimeoutError):
        return f"nobody answered the desktop's dialog asking to allow {what}: {error}", (
            consent_fix(what)
        )
    if isinstance(error, BusUnavailableError):
        return str(error), NO_BUS_FIX
    if isinstance(error, DBusCallError) and error.no_owner:
        return (
            f"xdg-desktop-portal is not running on the session bus ({error.name}), "
            f"so there is no {what}",
            PORTAL_MISSING_FIX,
        )
    if isinstance(error, RequestEndedError) and error.denied:
        # KDE's backend answers so too when its dialog cannot load.
        return (
            f"the user did not allow {what}, or the desktop could not show its dialog "
            f"({error.call} answered 1: cancelled)",
            f"{consent_fix(what)}; {NO_DIALOG_FIX}",
        )
    return f"setting up {what} through the portal failed: {error}", (
        "check the portal's log (journalctl --user -u xdg-desktop-portal) and that the "
        "compositor's portal backend runs"
    )


def interface_version(bus: PortalBus, interface: str) -> int | None:
    """The version of a portal interface, or None when the portal does not offer it.

    Raises DBusCallError when the portal itself is missing (no owner).
    """
    try:
        return int(bus.property(interface, "version"))
    except DBusCallError as error:
        if error.not_offered:
            return None
        raise


class PortalSession:
    """A portal session handle, and the watch on its Closed signal."""

    def __init__(self, bus: PortalBus, handle: str) -> None:
        self.bus = bus
        self.handle = handle
        self._closed_signals: deque[Message] = bus.watch(
            MatchRule(
                type="signal",
                sender=PORTAL_NAME,
                interface=SESSION_INTERFACE,
                member="Closed",
                path=handle,
            ),
            MatchRule(type="signal", interface=SESSION_INTERFACE, member="Closed", path=handle),
        )
        self._closed = False

    @property
    def closed_by_portal(self) -> bool:
        return bool(self._closed_signals)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.closed_by_portal:
            return
        try:
            self.bus.call(SESSION_INTERFACE, "Close", path=self.handle)
        except PlatformError as error:
            log.debug("closing portal session %s: %s", self.handle, error)


def _create_session(bus: PortalBus, interface: str, timeout_s: float) -> str:
    results = bus.request(
        interface,
        "CreateSession",
        "a{sv}",
        (),
        {"session_handle_token": ("s", bus.new_token("session"))},
        timeout_s=timeout_s,
    )
    return str(unwrap(results["session_handle"]))


def _streams(results: dict[str, tuple[str, Any]]) -> list[Monitor]:
    if "streams" not in results:
        return []
    streams = [
        (int(node), {key: unwrap(value) for key, value in properties.items()})
        for node, properties in unwrap(results["streams"])
    ]
    return monitors_from_streams(streams)


def _persist(options: Options, version: int, minimum: int, token: str | None) -> None:
    if version >= minimum:
        options["persist_mode"] = ("u", PERSIST_UNTIL_REVOKED)
        if token:
            options["restore_token"] = ("s", token)


class RemoteDesktopSession(PortalSession):
    """A started RemoteDesktop session with monitor streams: the portal input route.

    It owns its bus connection (a portal session belongs to the connection that
    made it) and closes it with the session.
    """

    def __init__(self, bus: PortalBus, handle: str, monitors: list[Monitor], devices: int) -> None:
        super().__init__(bus, handle)
        self.monitors = monitors
        self.devices = devices
        self.version = 0  # RemoteDesktop's interface version (2+: restore tokens)

    @property
    def persists(self) -> bool:
        """Whether this portal keeps consent across sessions (a restore token)."""
        return self.version >= 2

    def open_pipewire_remote(self) -> int:
        """A new descriptor of a PipeWire connection that sees this session's streams.

        One per reader: a PipeWire connection is one client's. The caller owns it.
        """
        try:
            (fd,) = self.bus.call(
                SCREENCAST_INTERFACE, "OpenPipeWireRemote", "oa{sv}", (self.handle, {})
            )
        except PlatformError as error:
            raise PortalUnavailableError(
                f"the portal did not open the screen-cast stream: {error}",
                "check that PipeWire runs in this session (systemctl --user status pipewire) "
                "and that the compositor's portal backend implements ScreenCast",
            ) from error
        return int(fd.to_raw_fd())

    @classmethod
    def start(
        cls,
        bus: PortalBus,
        tokens: TokenStore,
        *,
        consent_timeout_s: float = DEFAULT_CONSENT_TIMEOUT_S,
        interactive: bool = True,
        environ: Mapping[str, str] | None = None,
    ) -> RemoteDesktopSession:
        """Open, configure and start a session; asks the user unless the stored token works.

        Takes `bus` over (closed on failure too). Raises PortalUnavailableError with
        (cause, fix) when it cannot; ConsentNeededError (one) when a person must
        answer the dialog and nobody did within `consent_timeout_s`, or, with
        `interactive=False`, as soon as it is clear the dialog would be shown
        (`environ`, default this process's, tells which desktop would show it).
        """
        try:
            version = interface_version(bus, REMOTE_DESKTOP_INTERFACE)
            if version is None:
                raise PortalUnavailableError(
                    "the desktop portal offers no RemoteDesktop interface, so it cannot inject "
                    "input",
                    REMOTE_DESKTOP_MISSING_FIX,
                    not_offered=True,
                )
            available = int(bus.property(REMOTE_DESKTOP_INTERFACE, "AvailableDeviceTypes"))
            wanted = DEVICE_KEYBOARD | DEVICE_POINTER
            if available & wanted != wanted:
                raise PortalUnavailableError(
                    f"the portal's RemoteDesktop offers device types {available:#x}, "
                    "not both keyboard and pointer",
                    REMOTE_DESKTOP_MISSING_FIX,
                    not_offered=True,
                )
            if interface_version(bus, SCREENCAST_INTERFACE) is None:
                raise PortalUnavailableError(
                    "the desktop portal offers RemoteDesktop without ScreenCast, and absolute "
                    "pointer motion needs a screen-cast stream",
                    REMOTE_DESKTOP_MISSING_FIX,
                    not_offered=True,
                )
            if not interactive and remote_desktop_consent(bus, environ).asks:
                _refuse_dialog(version, tokens.get(REMOTE_DESKTOP))
            handle = _create_session(bus, REMOTE_DESKTOP_INTERFACE, consent_timeout_s)
        except BaseException as error:
            bus.close()
            if isinstance(error, PlatformError) and not isinstance(error, PortalUnavailableError):
                raise PortalUnavailableError(*problem_for(error, "remote control")) from error
            raise
        session = cls(bus, handle, [], 0)
        session.version = version
        try:
            session._configure(version, tokens, consent_timeout_s)
        except BaseException:
            session.close()
            raise
        return session

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.bus.close()

    def _configure(self, version: int, tokens: TokenStore, timeout_s: float) -> None:
        bus = self.bus
        try:
            devices: Options = {"types": ("u", DEVICE_KEYBOARD | DEVICE_POINTER)}
            _persist(devices, version, 2, tokens.get(REMOTE_DESKTOP))
            bus.request(
                REMOTE_DESKTOP_INTERFACE,
                "SelectDevices",
                "oa{sv}",
                (self.handle,),
                devices,
                timeout_s=timeout_s,
            )
            # No persist options here: a remote desktop's screen cast persists
            # through SelectDevices (the ScreenCast spec allows only mode 0).
            bus.request(
                SCREENCAST_INTERFACE,
                "SelectSources",
                "oa{sv}",
                (self.handle,),
                {"types": ("u", SOURCE_MONITOR), "multiple": ("b", True)},
                timeout_s=timeout_s,
            )
            results = bus.request(
                REMOTE_DESKTOP_INTERFACE,
                "Start",
                "osa{sv}",
                (self.handle, ""),
                {},
                timeout_s=timeout_s,
            )
        except RequestTimeoutError as error:
            raise ConsentNeededError(
                *problem_for(error, "remote control"), persists=version >= 2
            ) from error
        except PlatformError as error:
            raise PortalUnavailableError(*problem_for(error, "remote control")) from error
        # Single-use: store the next one, or forget a token the portal did not renew.
        tokens.put(
            REMOTE_DESKTOP, unwrap(results["restore_token"]) if "restore_token" in results else None
        )
        self.devices = int(unwrap(results.get("devices", ("u", 0))))
        wanted = DEVICE_KEYBOARD | DEVICE_POINTER
        if self.devices & wanted != wanted:
            raise PortalUnavailableError(
                f"the session was granted devices {self.devices:#x}, not both keyboard and pointer",
                consent_fix("both keyboard and pointer control"),
            )
        self.monitors = _streams(results)
        if not self.monitors:
            raise PortalUnavailableError(
                "the remote desktop session started without any monitor stream",
                consent_fix("sharing every monitor"),
            )

    # -- input --------------------------------------------------------------------
    def motion_absolute(self, node_id: int, x: float, y: float) -> None:
        self._notify("NotifyPointerMotionAbsolute", "oa{sv}udd", node_id, float(x), float(y))

    def button(self, code: int, pressed: bool) -> None:
        self._notify("NotifyPointerButton", "oa{sv}iu", code, int(pressed))

    def axis(self, dx: float, dy: float, finish: bool = True) -> None:
        """Smooth scroll by (dx, dy) logical pixels; finish ends the scroll gesture."""
        self._notify("NotifyPointerAxis", "oa{sv}dd", float(dx), float(dy), finish=finish)

    def axis_discrete(self, axis: int, steps: int) -> None:
        """Wheel notches on one axis; positive steps scroll down / right."""
        self._notify("NotifyPointerAxisDiscrete", "oa{sv}ui", axis, steps)

    def keysym(self, keysym: int, pressed: bool) -> None:
        self._notify("NotifyKeyboardKeysym", "oa{sv}iu", keysym, int(pressed))

    def _notify(self, method: str, signature: str, *args: Any, finish: bool | None = None) -> None:
        if self.closed_by_portal:
            raise InputError(_SESSION_CLOSED)
        options: Options = {} if finish is None else {"finish": ("b", finish)}
        body = (self.handle, options, *args)
        try:
            self.bus.call(REMOTE_DESKTOP_INTERFACE, method, signature, body)
        except PlatformError as error:
            # The Closed signal is read while waiting for this very reply.
            if self.closed_by_portal:
                raise InputError(_SESSION_CLOSED) from error
            raise InputError(f"the portal refused input: {error}") from error


_SESSION_CLOSED = (
    "the remote desktop session was closed by the desktop (the user stopped sharing, or the "
    "compositor ended it): reopen the backend to ask again"
)


class ScreenCastSession(PortalSession):
    """A ScreenCast session started only to learn the monitors' geometry."""

    @classmethod
    def monitors(
        cls,
        bus: PortalBus,
        tokens: TokenStore,
        *,
        consent_timeout_s: float = DEFAULT_CONSENT_TIMEOUT_S,
    ) -> list[Monitor] | None:
        """Every monitor's geometry, or None when the portal offers no ScreenCast.

        The session is closed straight away: it is needed for the geometry only,
        and an open one keeps the desktop's "screen is shared" indicator on.
        """
        try:
            version = interface_version(bus, SCREENCAST_INTERFACE)
            if version is None:
                return None
            handle = _create_session(bus, SCREENCAST_INTERFACE, consent_timeout_s)
        except PlatformError as error:
            raise PortalUnavailableError(
                *problem_for(error, "reading the monitor layout")
            ) from error
        session = cls(bus, handle)
        try:
            sources: Options = {"types": ("u", SOURCE_MONITOR), "multiple": ("b", True)}
            _persist(sources, version, 4, tokens.get(SCREENCAST))
            bus.request(
                SCREENCAST_INTERFACE,
                "SelectSources",
                "oa{sv}",
                (handle,),
                sources,
                timeout_s=consent_timeout_s,
            )
            results = bus.request(
                SCREENCAST_INTERFACE,
                "Start",
                "osa{sv}",
                (handle, ""),
                {},
                timeout_s=consent_timeout_s,
            )
            tokens.put(
                SCREENCAST, unwrap(results["restore_token"]) if "restore_token" in results else None
            )
            return _streams(results) or None
        except PlatformError as error:
            raise PortalUnavailableError(
                *problem_for(error, "reading the monitor layout")
            ) from error
        finally:
            session.close()


def _refuse_dialog(version: int, token: str | None) -> None:
    """Raise ConsentNeededError when starting a session now would show a dialog."""
    if version < 2:
        raise ConsentNeededError(
            f"this desktop's portal (RemoteDesktop version {version}) asks for consent at "
            "every session and cannot remember it (restore tokens need RemoteDesktop "
            "version 2, xdg-desktop-portal 1.17 or newer), and this run cannot show a dialog",
            "run holodesk where a person can answer the desktop's 'Remote desktop' dialog "
            "(allow remote interaction, then Share), or upgrade xdg-desktop-portal to 1.17+ "
            "so the answer is kept",
            persists=False,
        )
    if not token:
        raise ConsentNeededError(
            "no restore token is stored yet, so the desktop would ask for consent, and this "
            "run cannot show a dialog",
            "run holodesk once where a person can answer the desktop's 'Remote desktop' "
            "dialog; its answer is kept (a restore token) and later runs start without asking",
            persists=True,
        )


class PortalUnavailableError(PlatformError):
    """A portal route cannot be used: one (cause, fix) for BackendUnavailableError.

    `not_offered`: the portal lacks the interface (another route may do), as
    opposed to a refusal or failure (which another route must not paper over).
    """

    def __init__(self, cause: str, fix: str, *, not_offered: bool = False) -> None:
        self.cause = cause
        self.fix = fix
        self.not_offered = not_offered
        super().__init__(cause)

    @property
    def problem(self) -> Problem:
        return self.cause, self.fix


class ConsentNeededError(PortalUnavailableError):
    """A person must answer the desktop's consent dialog, and nobody can or did.

    `persists`: whether that answer would be kept (a restore token), so it is
    needed once, or is asked again at every session (RemoteDesktop version 1).
    """

    def __init__(self, cause: str, fix: str, *, persists: bool) -> None:
        super().__init__(cause, fix)
        self.persists = persists
