"""A blocking D-Bus client for xdg-desktop-portal (jeepney, pure Python).

Portal methods that need the user (consent dialogs, screenshots) do not answer
in their reply: they return a Request object path and later emit
org.freedesktop.portal.Request.Response(u code, a{sv} results) from it. The
path is predictable (`/org/freedesktop/portal/desktop/request/SENDER/TOKEN`,
from our unique name and the `handle_token` we pass), so we subscribe to its
Response *before* calling: a fast portal may answer before the call returns.
Older portals (< 0.9) returned another path; the match covers every request
path of this connection, and we wait for the one the call returned.

One connection per user (the screen and the input each own one); calls are
serialised by a lock, as a jeepney blocking connection is not thread-safe.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jeepney import (  # type: ignore[import-untyped]
    DBusAddress,
    HeaderFields,
    MatchRule,
    Message,
    MessageType,
    new_method_call,
)
from jeepney.bus_messages import message_bus  # type: ignore[import-untyped]
from jeepney.io.blocking import DBusConnection, open_dbus_connection  # type: ignore[import-untyped]

from holodesk.platform.errors import PlatformError

PORTAL_NAME = "org.freedesktop.portal.Desktop"
PORTAL_PATH = "/org/freedesktop/portal/desktop"
REQUEST_INTERFACE = "org.freedesktop.portal.Request"
SESSION_INTERFACE = "org.freedesktop.portal.Session"
PROPERTIES_INTERFACE = "org.freedesktop.DBus.Properties"

# Request.Response codes.
RESPONSE_SUCCESS = 0
RESPONSE_CANCELLED = 1  # the user dismissed or denied the dialog
RESPONSE_OTHER = 2  # ended some other way (e.g. the portal backend failed)

_NO_OWNER = frozenset(
    {
        "org.freedesktop.DBus.Error.ServiceUnknown",
        "org.freedesktop.DBus.Error.NameHasNoOwner",
        "org.freedesktop.DBus.Error.Spawn.ServiceNotFound",
        "org.freedesktop.DBus.Error.Spawn.ChildExited",
        "org.freedesktop.DBus.Error.Spawn.Failed",
    }
)
_NOT_OFFERED = frozenset(
    {
        "org.freedesktop.DBus.Error.UnknownMethod",
        "org.freedesktop.DBus.Error.UnknownInterface",
        "org.freedesktop.DBus.Error.UnknownObject",
        "org.freedesktop.DBus.Error.UnknownProperty",
        "org.freedesktop.DBus.Error.InvalidArgs",
    }
)

Variant = tuple[str, Any]
Options = dict[str, Variant]


class DBusCallError(PlatformError):
    """The bus or the portal answered a call with a D-Bus error."""

    def __init__(self, call: str, name: str, message: str) -> None:
        self.call = call
        self.name = name
        self.message = message
        super().__init__(
            f"{call} failed: {name}: {message}" if message else f"{call} failed: {name}"
        )

    @property
    def no_owner(self) -> bool:
        """Nothing owns the destination name: the service is not running."""
        return self.name in _NO_OWNER

    @property
    def not_offered(self) -> bool:
        """The service runs but has no such interface, method or property."""
        return self.name in _NOT_OFFERED


class BusUnavailableError(PlatformError):
    """There is no session bus to connect to."""


class RequestTimeoutError(PlatformError):
    """A portal request got no Response in time (a consent dialog nobody answered)."""


class RequestEndedError(PlatformError):
    """A portal request answered with a code other than success."""

    def __init__(self, call: str, code: int, results: Mapping[str, Variant]) -> None:
        self.call = call
        self.code = code
        self.results = dict(results)
        how = {RESPONSE_CANCELLED: "was cancelled or denied by the user"}.get(
            code, f"ended with response code {code}"
        )
        super().__init__(f"{call} {how}")

    @property
    def denied(self) -> bool:
        return self.code == RESPONSE_CANCELLED


def session_bus_address(environ: Mapping[str, str]) -> str:
    """$DBUS_SESSION_BUS_ADDRESS, else the systemd user bus socket if there is one."""
    address = environ.get("DBUS_SESSION_BUS_ADDRESS", "").strip()
    if address:
        return address
    runtime = environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and (Path(runtime) / "bus").exists():
        return f"unix:path={Path(runtime) / 'bus'}"
    raise BusUnavailableError(
        "there is no D-Bus session bus: DBUS_SESSION_BUS_ADDRESS is unset"
        + (f" and {runtime}/bus does not exist" if runtime else " and so is XDG_RUNTIME_DIR")
    )


def unwrap(value: Variant) -> Any:
    """The value inside a variant (jeepney represents one as (signature, value))."""
    return value[1]


class PortalBus:
    """One connection to the session bus, talking to xdg-desktop-portal."""

    def __init__(self, address: str, *, call_timeout_s: float = 10.0) -> None:
        try:
            # With descriptors: ScreenCast.OpenPipeWireRemote answers with one.
            self._connection: DBusConnection = open_dbus_connection(bus=address, enable_fds=True)
        except (OSError, RuntimeError, ValueError, TimeoutError) as error:
            raise BusUnavailableError(
                f"cannot connect to the D-Bus session bus at {address!r}: {error}"
            ) from error
        self.address = address
        self.unique_name: str = self._connection.unique_name
        # ":1.42" -> "1_42", as the portal spells it in request and session paths.
        self.sender_token = self.unique_name.lstrip(":").replace(".", "_")
        self._call_timeout_s = call_timeout_s
        self._lock = threading.RLock()
        self._closed = False

    # -- plain calls --------------------------------------------------------------
    def call(
        self,
        interface: str,
        method: str,
        signature: str | None = None,
        body: tuple[Any, ...] = (),
        *,
        path: str = PORTAL_PATH,
        destination: str = PORTAL_NAME,
        timeout_s: float | None = None,
    ) -> tuple[Any, ...]:
        """Call a method and return its reply's body; DBusCallError for an error reply."""
        message = new_method_call(
            DBusAddress(path, bus_name=destination, interface=interface), method, signature, body
        )
        name = f"{interface.rsplit('.', 1)[-1]}.{method}"
        with self._lock:
            reply = self._send(message, name, timeout_s)
        return tuple(reply.body)

    def property(self, interface: str, name: str) -> Any:
        """A portal interface's property (e.g. its version)."""
        (value,) = self.call(PROPERTIES_INTERFACE, "Get", "ss", (interface, name))
        return unwrap(value)

    def has_owner(self, name: str = PORTAL_NAME) -> bool:
        (owned,) = self.call(
            "org.freedesktop.DBus",
            "NameHasOwner",
            "s",
            (name,),
            path="/org/freedesktop/DBus",
            destination="org.freedesktop.DBus",
        )
        return bool(owned)

    # -- Request/Response ----------------------------------------------------------
    def new_token(self, kind: str) -> str:
        """A fresh handle/session token: [A-Za-z0-9_] only, as object paths need."""
        return f"holodesk_{kind}_{secrets.token_hex(6)}"

    def request(
        self,
        interface: str,
        method: str,
        signature: str,
        body: tuple[Any, ...],
        options: Options,
        *,
        timeout_s: float,
    ) -> dict[str, Variant]:
        """Call a portal method that answers through a Request; return its results.

        `body` is every argument before the trailing a{sv} options, which get the
        handle_token. Raises RequestEndedError unless the response code is 0.
        """
        token = self.new_token("request")
        expected = f"{PORTAL_PATH}/request/{self.sender_token}/{token}"
        # Every request of ours, so a portal that returns another path is still heard.
        rule = MatchRule(
            type="signal",
            sender=PORTAL_NAME,
            interface=REQUEST_INTERFACE,
            member="Response",
            path_namespace=f"{PORTAL_PATH}/request/{self.sender_token}",
        )
        local = MatchRule(type="signal", interface=REQUEST_INTERFACE, member="Response")
        name = f"{interface.rsplit('.', 1)[-1]}.{method}"
        with self._lock:
            self._add_match(rule)
            try:
                with self._connection.filter(local, queue=deque()) as responses:
                    (handle,) = self._send(
                        new_method_call(
                            DBusAddress(PORTAL_PATH, bus_name=PORTAL_NAME, interface=interface),
                            method,
                            signature,
                            (*body, {**options, "handle_token": ("s", token)}),
                        ),
                        name,
                        None,
                    ).body
                    if handle != expected:
                        # A pre-0.9 portal: its path is not ours to predict.
                        expected = str(handle)
                    code, results = self._await_response(responses, expected, name, timeout_s)
            finally:
                self._remove_match(rule)
        if code != RESPONSE_SUCCESS:
            raise RequestEndedError(name, int(code), results)
        return dict(results)

    def _await_response(
        self, responses: deque[Message], path: str, call: str, timeout_s: float
    ) -> tuple[int, dict[str, Variant]]:
        try:
            while True:
                message = self._connection.recv_until_filtered(responses, timeout=timeout_s)
                if message.header.fields.get(HeaderFields.path) == path:
                    code, results = message.body
                    return int(code), dict(results)
        except TimeoutError:
            # Tell the portal we stopped waiting, so its dialog does not linger.
            self._close_request(path)
            raise RequestTimeoutError(
                f"{call}: no answer from the portal within {timeout_s:.0f} s "
                "(a consent dialog left open?)"
            ) from None
        except OSError as error:
            raise PlatformError(f"lost the D-Bus session bus during {call}: {error}") from error

    def _close_request(self, path: str) -> None:
        with contextlib.suppress(PlatformError):
            self._send(
                new_method_call(
                    DBusAddress(path, bus_name=PORTAL_NAME, interface=REQUEST_INTERFACE), "Close"
                ),
                "Request.Close",
                self._call_timeout_s,
            )

    # -- signals kept for the connection's life -------------------------------------
    def watch(self, rule: MatchRule, local: MatchRule) -> deque[Message]:
        """Queue every signal matching `rule` from now on (seen during later calls)."""
        queue: deque[Message] = deque()
        with self._lock:
            self._add_match(rule)
            # Registered for good (a handle registers on creation): the watch
            # lives as long as the connection.
            self._connection.filter(local, queue=queue)
        return queue

    # -- plumbing -------------------------------------------------------------------
    def _send(self, message: Message, call: str, timeout_s: float | None) -> Message:
        if self._closed:
            raise PlatformError(f"{call}: the D-Bus connection is closed")
        timeout = self._call_timeout_s if timeout_s is None else timeout_s
        try:
            reply = self._connection.send_and_get_reply(message, timeout=timeout)
        except TimeoutError:
            raise PlatformError(
                f"{call}: no reply on the session bus within {timeout:.0f} s"
            ) from None
        except OSError as error:
            raise PlatformError(f"lost the D-Bus session bus during {call}: {error}") from error
        if reply.header.message_type == MessageType.error:
            error_name = str(reply.header.fields.get(HeaderFields.error_name, "unknown error"))
            text = str(reply.body[0]) if reply.body and isinstance(reply.body[0], str) else ""
            raise DBusCallError(call, error_name, text)
        return reply

    def _add_match(self, rule: MatchRule) -> None:
        self._send(message_bus.AddMatch(rule), "AddMatch", None)

    def _remove_match(self, rule: MatchRule) -> None:
        with contextlib.suppress(PlatformError):  # the connection is going anyway
            self._send(message_bus.RemoveMatch(rule), "RemoveMatch", None)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._connection.close()


def default_address(environ: Mapping[str, str] | None = None) -> str:
    return session_bus_address(os.environ if environ is None else environ)
