"""The VNC backend: drive any desktop, VM or container that serves VNC (RFB).

Nothing is installed on the far side: capture is the server's framebuffer,
input is RFB pointer and key events. One display: the whole framebuffer at
(0, 0), scale 1.0 (the server's pixels are the only pixels there are).

Route: a compact RFB client of our own (`holodesk.platform.vnc`), not a
library. The candidates on PyPI fell short:
- asyncvnc (and its fork asyncvnc2) is GPL-licensed and unmaintained since 2023.
- vncdotool (MIT, maintained) sits on Twisted, whose one reactor per process
  serves every connection and cannot be restarted after a stop; its ZRLE
  decoder is pure Python, pixel by pixel (seconds for a full screen); it
  sends ord(char) as the keysym, which is wrong for every character beyond
  Latin-1 (日 would go as 0x65E5, not the Unicode keysym 0x010065E5); and it
  cannot tell "nothing changed" from "no answer" when asked for a fresh frame.
Ours is ~600 lines over plain sockets and numpy: RFB 3.3/3.7/3.8, security
None and VNC authentication (DES from `cryptography`), Raw, CopyRect and ZRLE
(numpy per tile), DesktopSize, Cursor (so captures carry no pointer, like
other backends'), LastRect and DesktopName; one reader thread per connection.

Options come as arguments, else from the environment, so `holodesk run
--backend vnc` needs no code: $HOLODESK_VNC_SERVER (``host``, ``host:N`` for
VNC display N = port 5900+N, ``host::port``) and $HOLODESK_VNC_PASSWORD.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping, Sequence

from holodesk.platform.base import Backend
from holodesk.platform.errors import BackendUnavailableError
from holodesk.platform.vnc.address import parse_server
from holodesk.platform.vnc.connection import DEFAULT_PORT, VncLink, VncTarget
from holodesk.platform.vnc.errors import RfbError
from holodesk.platform.vnc.handshake import DEFAULT_ENCODINGS
from holodesk.platform.vnc.input import DEFAULT_SETTLE_S, VncInput
from holodesk.platform.vnc.keys import validate_budget
from holodesk.platform.vnc.screen import DEFAULT_UPDATE_TIMEOUT_S, VncScreen

SERVER_ENV = "HOLODESK_VNC_SERVER"
PASSWORD_ENV = "HOLODESK_VNC_PASSWORD"
DEFAULT_HOST = "127.0.0.1"
LOCAL_ENCODINGS = ("raw", "copyrect")


def create(
    host: str | None = None,
    port: int | None = None,
    password: str | None = None,
    display_id: str | None = None,
    *,
    encodings: Sequence[str] | None = None,
    unicode_keysyms: bool | None = None,
    keysym_budget: int | str | None = "auto",
    settle_s: float = DEFAULT_SETTLE_S,
    connect_timeout_s: float = 10.0,
    update_timeout_s: float = DEFAULT_UPDATE_TIMEOUT_S,
    shared: bool = True,
    environ: Mapping[str, str] | None = None,
) -> Backend:
    """Connect to the VNC server at host:port (defaults: $HOLODESK_VNC_SERVER, else :5900).

    `password`: else $HOLODESK_VNC_PASSWORD, needed when the server asks for one.
    `display_id`: the id of the one display (default "vnc:HOST:PORT").
    `encodings`: preference order among "zrle", "copyrect", "raw"; default raw
    on loopback (a full 1280x800 update ~17 ms vs ZRLE's ~120 ms of server-side
    deflate), ZRLE elsewhere (a desktop compresses 10-100x).
    `unicode_keysyms`: whether the server types characters beyond ASCII, and
    `keysym_budget`: how many distinct ones it binds in its lifetime ("auto":
    known per server family; None: no limit); see `holodesk.platform.vnc.keys`.
    `settle_s`: pause after a character's first use on the server.
    `shared`: False asks the server to disconnect other viewers.
    """
    validate_budget(keysym_budget)
    if settle_s < 0:
        raise ValueError(f"settle_s cannot be negative: {settle_s}")
    env = os.environ if environ is None else environ
    target = _target(host, port, password, env, encodings, connect_timeout_s, shared)
    try:
        client = target.connect()
    except RfbError as error:
        raise BackendUnavailableError([(error.message, error.fix)], backend="vnc") from error
    link = VncLink(target, client)
    return Backend(
        name="vnc",
        os="vnc",
        screen=VncScreen(link, display_id or f"vnc:{target.address}", update_timeout_s),
        input=VncInput(link, unicode_keysyms, keysym_budget, settle_s),
        # RFB never reports the remote pointer: positions are the client's own moves.
        observes_user_pointer=False,
    )


def _target(
    host: str | None,
    port: int | None,
    password: str | None,
    env: Mapping[str, str],
    encodings: Sequence[str] | None,
    connect_timeout_s: float,
    shared: bool,
) -> VncTarget:
    server = env.get(SERVER_ENV, "").strip()
    if host is None and server:
        try:
            host, env_port = parse_server(server)
        except ValueError as error:
            raise BackendUnavailableError(
                [(f"{SERVER_ENV}={server!r} is not a VNC address: {error}", _ADDRESS_FIX)],
                backend="vnc",
            ) from None
        port = env_port if port is None else port
    if password is None:
        password = env.get(PASSWORD_ENV) or None
    host = host or DEFAULT_HOST
    if encodings is None:
        encodings = LOCAL_ENCODINGS if _loopback(host) else DEFAULT_ENCODINGS
    return VncTarget(
        host=host,
        port=DEFAULT_PORT if port is None else port,
        password=password,
        encodings=tuple(encodings),
        connect_timeout_s=connect_timeout_s,
        shared=shared,
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_ADDRESS_FIX = "write it as HOST, HOST:DISPLAY (port 5900+DISPLAY) or HOST::PORT"
