"""A stand-in for xdg-desktop-portal that turns portal calls into real input on an X server.

It stands in for a Wayland compositor's portal backend (xdg-desktop-portal with
xdg-desktop-portal-gnome or -kde), which cannot run here: there is no Wayland
compositor on these machines. It serves, on a private session bus, the parts of
org.freedesktop.portal.{RemoteDesktop,ScreenCast,Screenshot,Request,Session}
the wayland backend uses, with the portal's own rules: request and session
object paths derived from the caller's unique name and its tokens, Request.Response
signals broadcast after the method returns (so a caller that subscribes late
misses them), sessions owned by the connection that created them, single-use
restore tokens for persist_mode=2, response code 1 when consent is refused.
What a compositor would do, it does on an X display: pointer motion in a
stream's logical space becomes XTest motion on that monitor's physical pixels
(monitors are regions of the X screen, with an optional scale), evdev buttons
become X buttons (BTN_SIDE/EXTRA: 8/9), discrete and smooth axis events become
wheel buttons 4-7, keysyms are typed with a key found in the keymap, else a
spare keycode bound to the keysym (as KWin 6 does; mutter 43 and KDE Plasma 5.27
drop a keysym their keymap lacks, which the route refuses: portal_keysyms), and
screenshots come from mss.

Every call is logged as a JSON line, for tests to inspect. A test-only
interface, org.holodesk.Standin, can close every session (as a user pressing
"Stop sharing" would).

Run: python -m tests.support.portal_standin --address ADDR --display :N --log FILE [options]
It prints "ready" once it owns org.freedesktop.portal.Desktop.
"""

from __future__ import annotations

import argparse
import json
import math
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import mss
from jeepney import (  # type: ignore[import-untyped]
    DBusAddress,
    HeaderFields,
    Message,
    MessageType,
    new_error,
    new_method_return,
    new_signal,
)
from jeepney.bus_messages import message_bus  # type: ignore[import-untyped]
from jeepney.io.blocking import DBusConnection, open_dbus_connection  # type: ignore[import-untyped]
from PIL import Image
from Xlib import X
from Xlib.display import Display
from Xlib.ext import xtest

from holodesk.platform.base import Region
from holodesk.platform.x11.input import X11Input
from holodesk.platform.x11.keysyms import NAMED_KEYSYMS, char_for_keysym

PORTAL_NAME = "org.freedesktop.portal.Desktop"
PORTAL_PATH = "/org/freedesktop/portal/desktop"
REMOTE_DESKTOP = "org.freedesktop.portal.RemoteDesktop"
SCREENCAST = "org.freedesktop.portal.ScreenCast"
SCREENSHOT = "org.freedesktop.portal.Screenshot"
REQUEST = "org.freedesktop.portal.Request"
SESSION = "org.freedesktop.portal.Session"
PROPERTIES = "org.freedesktop.DBus.Properties"
CONTROL = "org.holodesk.Standin"

# evdev button code -> X button number.
X_BUTTONS = {0x110: 1, 0x111: 3, 0x112: 2, 0x113: 8, 0x114: 9}
# Clutter's (GNOME's) smooth-scroll distance per emulated wheel notch.
SMOOTH_STEP_PX = 10.0
_KEY_NAMES = {keysym: name for name, keysym in NAMED_KEYSYMS.items()}

Reply = tuple[str | None, tuple[Any, ...]]
Handler = Callable[[str, tuple[Any, ...], list[Message]], Reply]


@dataclass
class Config:
    display: str
    log_path: Path
    screenshot_dir: Path
    consent: str = "allow"  # or "deny"
    screenshot: str = "allow"  # or "deny"
    remote_desktop: bool = True
    screencast: bool = True
    monitors: list[Region] = field(default_factory=list)  # physical, on the X screen
    scale: int = 1


class PortalError(Exception):
    """Answered to the caller as a D-Bus error."""

    def __init__(self, name: str, message: str) -> None:
        self.name = name
        super().__init__(message)


@dataclass
class Session:
    handle: str
    sender: str
    kind: str  # "remote_desktop" or "screencast"
    devices: int = 0
    sources: bool = False
    persist_mode: int = 0
    restore_token: str = ""
    started: bool = False
    granted: int = 0
    closed: bool = False


def _unwrap_options(options: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    return {key: value[1] for key, value in options.items()}


def _sender_token(sender: str) -> str:
    return sender.lstrip(":").replace(".", "_")


class StandinPortal:
    def __init__(self, connection: DBusConnection, config: Config, log: TextIO) -> None:
        self.connection = connection
        self.config = config
        self.log = log
        self.sessions: dict[str, Session] = {}
        self.valid_tokens: set[str] = set()
        self.shot_count = 0
        self.pointer = Display(config.display)
        self.keys = X11Input(Display(config.display))
        self.accumulated = [0.0, 0.0]  # smooth scroll, per axis
        screen = self.pointer.screen()
        self.monitors = config.monitors or [
            Region(0, 0, screen.width_in_pixels, screen.height_in_pixels)
        ]
        for monitor in self.monitors:
            if any(v % config.scale for v in (monitor.x, monitor.y, monitor.width, monitor.height)):
                raise SystemExit(f"monitor {monitor} is not a multiple of scale {config.scale}")

    # -- loop ------------------------------------------------------------------------
    def serve(self) -> None:
        while True:
            message = self.connection.receive()
            if message.header.message_type != MessageType.method_call:
                continue
            self.dispatch(message)

    def dispatch(self, message: Message) -> None:
        fields = message.header.fields
        interface = fields.get(HeaderFields.interface, "")
        member = fields.get(HeaderFields.member, "")
        path = fields.get(HeaderFields.path, "")
        sender = fields.get(HeaderFields.sender, "")
        call = f"{interface.rsplit('.', 1)[-1]}.{member}"
        # When it came (this machine's monotonic clock, as the test's): what a test of
        # stopping counts, so the stand-in's own X backlog is not taken for late input.
        received = time.monotonic()
        self.record({"call": call, "path": path, "args": _loggable(message.body), "at": received})
        after: list[Message] = []
        try:
            signature, body = self.handle(interface, member, path, sender, message.body, after)
            self.connection.send(new_method_return(message, signature, body))
        except PortalError as error:
            self.record({"error": error.name, "call": call, "message": str(error)})
            self.connection.send(new_error(message, error.name, "s", (str(error),)))
        for signal in after:  # Responses go after the reply, as the real portal's do
            self.connection.send(signal)

    def handle(
        self,
        interface: str,
        member: str,
        path: str,
        sender: str,
        args: tuple[Any, ...],
        after: list[Message],
    ) -> tuple[str | None, tuple[Any, ...]]:
        if interface == PROPERTIES and path == PORTAL_PATH:
            return self.properties(member, args)
        if interface == SESSION and member == "Close":
            self.close_session(self.session(path, sender))
            return None, ()
        if interface == REQUEST and member == "Close":
            return None, ()
        if interface == CONTROL and member == "CloseSessions":
            for session in list(self.sessions.values()):
                if not session.closed:
                    session.closed = True
                    after.append(
                        new_signal(
                            DBusAddress(session.handle, interface=SESSION), "Closed", "a{sv}", ({},)
                        )
                    )
            return None, ()
        if path != PORTAL_PATH or interface not in self.offered():
            raise PortalError(
                "org.freedesktop.DBus.Error.UnknownMethod",
                f"No such interface '{interface}' on object at path {path}",
            )
        method = self.methods().get((interface, member))
        if method is None:
            raise PortalError("org.freedesktop.DBus.Error.UnknownMethod", f"no method {member}")
        result: tuple[str | None, tuple[Any, ...]] = method(sender, args, after)
        return result

    def methods(self) -> dict[tuple[str, str], Handler]:
        return {
            (REMOTE_DESKTOP, "CreateSession"): self.remote_desktop_create_session,
            (SCREENCAST, "CreateSession"): self.screencast_create_session,
            (REMOTE_DESKTOP, "SelectDevices"): self.select_devices,
            (SCREENCAST, "SelectSources"): self.select_sources,
            (REMOTE_DESKTOP, "Start"): self.remote_desktop_start,
            (SCREENCAST, "Start"): self.screencast_start,
            (REMOTE_DESKTOP, "NotifyPointerMotionAbsolute"): self.notify_pointer_motion_absolute,
            (REMOTE_DESKTOP, "NotifyPointerButton"): self.notify_pointer_button,
            (REMOTE_DESKTOP, "NotifyPointerAxisDiscrete"): self.notify_pointer_axis_discrete,
            (REMOTE_DESKTOP, "NotifyPointerAxis"): self.notify_pointer_axis,
            (REMOTE_DESKTOP, "NotifyKeyboardKeysym"): self.notify_keyboard_keysym,
            (SCREENSHOT, "Screenshot"): self.screenshot,
        }

    def offered(self) -> dict[str, dict[str, tuple[str, Any]]]:
        interfaces: dict[str, dict[str, tuple[str, Any]]] = {SCREENSHOT: {"version": ("u", 2)}}
        if self.config.screencast:
            interfaces[SCREENCAST] = {
                "version": ("u", 5),
                "AvailableSourceTypes": ("u", 1 | 2),
                "AvailableCursorModes": ("u", 1 | 2),
            }
        if self.config.remote_desktop:
            interfaces[REMOTE_DESKTOP] = {
                "version": ("u", 2),
                "AvailableDeviceTypes": ("u", 1 | 2),
            }
        return interfaces

    def properties(self, member: str, args: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
        interface = args[0]
        offered = self.offered()
        if interface not in offered:
            raise PortalError(
                "org.freedesktop.DBus.Error.InvalidArgs", f"No such interface '{interface}'"
            )
        if member == "GetAll":
            return "a{sv}", (offered[interface],)
        if member == "Get" and args[1] in offered[interface]:
            return "v", (offered[interface][args[1]],)
        raise PortalError(
            "org.freedesktop.DBus.Error.InvalidArgs", f"No such property '{args[-1]}'"
        )

    # -- requests and sessions ---------------------------------------------------------
    def respond(
        self,
        sender: str,
        options: dict[str, Any],
        code: int,
        results: dict[str, Any],
        after: list[Message],
    ) -> tuple[str, tuple[Any, ...]]:
        token = options.get("handle_token", ("s", f"t{secrets.token_hex(4)}"))[1]
        path = f"{PORTAL_PATH}/request/{_sender_token(sender)}/{token}"
        self.record({"response": code, "path": path, "results": _loggable(results)})
        after.append(
            new_signal(DBusAddress(path, interface=REQUEST), "Response", "ua{sv}", (code, results))
        )
        return "o", (path,)

    def session(self, handle: str, sender: str, *, started: bool | None = None) -> Session:
        session = self.sessions.get(handle)
        if session is None or session.closed:
            raise PortalError("org.freedesktop.portal.Error.NotFound", f"no session {handle}")
        if session.sender != sender:
            raise PortalError("org.freedesktop.portal.Error.NotAllowed", "not your session")
        if started is not None and session.started != started:
            raise PortalError(
                "org.freedesktop.portal.Error.Failed",
                "session already started" if session.started else "session not started",
            )
        return session

    def close_session(self, session: Session) -> None:
        session.closed = True
        self.keys.release_all()

    def create_session(
        self, sender: str, args: tuple[Any, ...], kind: str, after: list[Message]
    ) -> tuple[str, tuple[Any, ...]]:
        (options,) = args
        token = options["session_handle_token"][1]
        handle = f"{PORTAL_PATH}/session/{_sender_token(sender)}/{token}"
        self.sessions[handle] = Session(handle, sender, kind)
        return self.respond(sender, options, 0, {"session_handle": ("s", handle)}, after)

    def remote_desktop_create_session(
        self, sender: str, args: tuple[Any, ...], after: list[Message]
    ) -> tuple[str, tuple[Any, ...]]:
        return self.create_session(sender, args, "remote_desktop", after)

    def screencast_create_session(
        self, sender: str, args: tuple[Any, ...], after: list[Message]
    ) -> tuple[str, tuple[Any, ...]]:
        return self.create_session(sender, args, "screencast", after)

    def select_devices(
        self, sender: str, args: tuple[Any, ...], after: list[Message]
    ) -> tuple[str, tuple[Any, ...]]:
        handle, options = args
        session = self.session(handle, sender, started=False)
        values = _unwrap_options(options)
        session.devices = int(values.get("types", 1 | 2))
        session.persist_mode = int(values.get("persist_mode", 0))
        session.restore_token = str(values.get("restore_token", ""))
        return self.respond(sender, options, 0, {}, after)

    def select_sources(
        self, sender: str, args: tuple[Any, ...], after: list[Message]
    ) -> tuple[str, tuple[Any, ...]]:
        handle, options = args
        session = self.session(handle, sender, started=False)
        values = _unwrap_options(options)
        if session.kind == "remote_desktop" and values.get("persist_mode", 0):
            raise PortalError(
                "org.freedesktop.portal.Error.InvalidArgument",
                "Remote desktop sessions cannot persist",
            )
        if session.kind == "screencast":
            session.persist_mode = int(values.get("persist_mode", 0))
            session.restore_token = str(values.get("restore_token", ""))
        session.sources = int(values.get("types", 1)) & 1 == 1
        return self.respond(sender, options, 0, {}, after)

    def start(
        self, sender: str, args: tuple[Any, ...], after: list[Message]
    ) -> tuple[str, tuple[Any, ...]]:
        handle, _parent, options = args
        session = self.session(handle, sender, started=False)
        restored = session.restore_token in self.valid_tokens
        if restored:
            self.valid_tokens.discard(session.restore_token)  # single use
        else:
            granted = self.config.consent == "allow"
            self.record({"event": "consent", "kind": session.kind, "granted": granted})
            if not granted:
                self.close_session(session)
                return self.respond(sender, options, 1, {}, after)
        session.started = True
        session.granted = session.devices if session.kind == "remote_desktop" else 0
        results: dict[str, Any] = {}
        if session.kind == "remote_desktop":
            results["devices"] = ("u", session.granted)
        if session.sources:
            results["streams"] = ("a(ua{sv})", self.streams())
        if session.persist_mode == 2:
            token = secrets.token_hex(8)
            self.valid_tokens.add(token)
            results["restore_token"] = ("s", token)
        self.record({"event": "started", "kind": session.kind, "restored": restored})
        return self.respond(sender, options, 0, results, after)

    def remote_desktop_start(
        self, sender: str, args: tuple[Any, ...], after: list[Message]
    ) -> tuple[str, tuple[Any, ...]]:
        return self.start(sender, args, after)

    def screencast_start(
        self, sender: str, args: tuple[Any, ...], after: list[Message]
    ) -> tuple[str, tuple[Any, ...]]:
        return self.start(sender, args, after)

    def streams(self) -> list[tuple[int, dict[str, tuple[str, Any]]]]:
        scale = self.config.scale
        return [
            (
                40 + index,
                {
                    "id": ("s", f"monitor{index}"),
                    "position": ("(ii)", (monitor.x // scale, monitor.y // scale)),
                    "size": ("(ii)", (monitor.width // scale, monitor.height // scale)),
                    "source_type": ("u", 1),
                },
            )
            for index, monitor in enumerate(self.monitors)
        ]

    # -- input -------------------------------------------------------------------------
    def input_session(self, sender: str, handle: str, device: int) -> Session:
        session = self.session(handle, sender, started=True)
        if session.kind != "remote_desktop" or not session.granted & device:
            raise PortalError("org.freedesktop.portal.Error.NotAllowed", "device not granted")
        return session

    def notify_pointer_motion_absolute(
        self, sender: str, args: tuple[Any, ...], after: list[Message]
    ) -> tuple[None, tuple[()]]:
        handle, _options, stream, x, y = args
        self.input_session(sender, handle, 2)
        index = stream - 40
        if not 0 <= index < len(self.monitors):
            raise PortalError("org.freedesktop.portal.Error.InvalidArgument", f"no stream {stream}")
        monitor = self.monitors[index]
        scale = self.config.scale
        if not (0 <= x < monitor.width / scale and 0 <= y < monitor.height / scale):
            raise PortalError(
                "org.freedesktop.portal.Error.InvalidArgument",
                f"({x}, {y}) is outside stream {stream}",
            )
        root = self.pointer.screen().root
        # The pointer is in the physical pixel that holds the point, as on a compositor.
        xtest.fake_input(
            self.pointer,
            X.MotionNotify,
            x=monitor.x + math.floor(x * scale),
            y=monitor.y + math.floor(y * scale),
            root=root,
        )
        self.pointer.sync()
        return None, ()

    def notify_pointer_button(
        self, sender: str, args: tuple[Any, ...], after: list[Message]
    ) -> tuple[None, tuple[()]]:
        handle, _options, button, state = args
        self.input_session(sender, handle, 2)
        if button not in X_BUTTONS:
            raise PortalError("org.freedesktop.portal.Error.InvalidArgument", f"button {button:#x}")
        xtest.fake_input(
            self.pointer, X.ButtonPress if state else X.ButtonRelease, X_BUTTONS[button]
        )
        self.pointer.sync()
        return None, ()

    def notify_pointer_axis_discrete(
        self, sender: str, args: tuple[Any, ...], after: list[Message]
    ) -> tuple[None, tuple[()]]:
        handle, _options, axis, steps = args
        self.input_session(sender, handle, 2)
        if axis not in (0, 1):
            raise PortalError("org.freedesktop.portal.Error.InvalidArgument", f"axis {axis}")
        self.wheel(axis, steps)
        return None, ()

    def notify_pointer_axis(
        self, sender: str, args: tuple[Any, ...], after: list[Message]
    ) -> tuple[None, tuple[()]]:
        handle, options, dx, dy = args
        self.input_session(sender, handle, 2)
        # Like Clutter: a notch per SMOOTH_STEP_PX of motion, the remainder kept
        # until the gesture finishes.
        for axis, delta in ((0, dy), (1, dx)):
            self.accumulated[axis] += delta
            steps = int(self.accumulated[axis] / SMOOTH_STEP_PX)
            self.accumulated[axis] -= steps * SMOOTH_STEP_PX
            self.wheel(axis, steps)
        if _unwrap_options(options).get("finish", False):
            self.accumulated = [0.0, 0.0]
        return None, ()

    def wheel(self, axis: int, steps: int) -> None:
        number = (5 if steps > 0 else 4) if axis == 0 else (7 if steps > 0 else 6)
        for _ in range(abs(steps)):
            xtest.fake_input(self.pointer, X.ButtonPress, number)
            xtest.fake_input(self.pointer, X.ButtonRelease, number)
        self.pointer.sync()

    def notify_keyboard_keysym(
        self, sender: str, args: tuple[Any, ...], after: list[Message]
    ) -> tuple[None, tuple[()]]:
        handle, _options, keysym, state = args
        self.input_session(sender, handle, 1)
        name = _KEY_NAMES.get(keysym) or char_for_keysym(keysym)
        if name is None:
            raise PortalError("org.freedesktop.portal.Error.InvalidArgument", f"keysym {keysym:#x}")
        if state:
            self.keys.key_down(name)
        else:
            self.keys.key_up(name)
        return None, ()

    # -- screenshots -------------------------------------------------------------------
    def screenshot(
        self, sender: str, args: tuple[Any, ...], after: list[Message]
    ) -> tuple[str, tuple[Any, ...]]:
        _parent, options = args
        if self.config.screenshot != "allow":
            return self.respond(sender, options, 1, {}, after)
        left = min(m.x for m in self.monitors)
        top = min(m.y for m in self.monitors)
        right = max(m.right for m in self.monitors)
        bottom = max(m.bottom for m in self.monitors)
        with mss.MSS(display=self.config.display) as grabber:
            shot = grabber.grab(
                {"left": left, "top": top, "width": right - left, "height": bottom - top}
            )
        image = Image.frombytes("RGB", shot.size, shot.bgra, "raw", "BGRX")
        self.shot_count += 1
        path = self.config.screenshot_dir / f"Screenshot {self.shot_count}.png"
        image.save(path)
        return self.respond(sender, options, 0, {"uri": ("s", path.as_uri())}, after)

    # -- log ---------------------------------------------------------------------------
    def record(self, entry: dict[str, Any]) -> None:
        self.log.write(json.dumps(entry) + "\n")
        self.log.flush()


def _loggable(value: Any) -> Any:
    """Message bodies as JSON: variants unwrapped to their values."""
    if isinstance(value, dict):
        return {
            str(k): _loggable(
                v[1] if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) else v
            )
            for k, v in value.items()
        }
    if isinstance(value, (tuple, list)):
        return [_loggable(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    return value


def _region(text: str) -> Region:
    x, y, width, height = (int(v) for v in text.split(","))
    return Region(x, y, width, height)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--address", required=True)
    parser.add_argument("--display", required=True)
    parser.add_argument("--log", required=True, type=Path)
    parser.add_argument("--screenshot-dir", required=True, type=Path)
    parser.add_argument("--consent", choices=("allow", "deny"), default="allow")
    parser.add_argument("--screenshot", choices=("allow", "deny"), default="allow")
    parser.add_argument("--no-remote-desktop", action="store_true")
    parser.add_argument("--no-screencast", action="store_true")
    parser.add_argument("--monitor", action="append", type=_region, default=[], help="X,Y,W,H")
    parser.add_argument("--scale", type=int, default=1)
    args = parser.parse_args(argv)
    config = Config(
        display=args.display,
        log_path=args.log,
        screenshot_dir=args.screenshot_dir,
        consent=args.consent,
        screenshot=args.screenshot,
        remote_desktop=not args.no_remote_desktop,
        screencast=not args.no_screencast,
        monitors=args.monitor,
        scale=args.scale,
    )
    connection = open_dbus_connection(bus=args.address)
    with args.log.open("a", encoding="utf-8") as log:
        portal = StandinPortal(connection, config, log)
        reply = connection.send_and_get_reply(message_bus.RequestName(PORTAL_NAME, 4))
        if reply.body != (1,):  # DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER
            raise SystemExit(f"could not own {PORTAL_NAME}: {reply.body}")
        print("ready", flush=True)
        portal.serve()


if __name__ == "__main__":
    main(sys.argv[1:])
