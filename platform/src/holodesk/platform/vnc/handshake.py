"""The opening of an RFB connection: versions, security, the server's first words,
and what this client asks for (its pixel format and encodings).

It runs before the connection's reader thread starts, over the connection's own
blocking `read` and `sendall`, so it is plain request and answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from holodesk.platform.vnc.errors import AuthenticationError, ConnectionLostError, RfbError, why
from holodesk.platform.vnc.protocol import (
    BGRX,
    CHALLENGE_LENGTH,
    SERVER_INIT_HEAD,
    U32,
    VERSION_LENGTH,
    Encoding,
    ProtocolError,
    Security,
    Version,
    security_name,
    set_encodings,
    set_pixel_format,
    vnc_auth_response,
)

log = logging.getLogger(__name__)

ENCODINGS: dict[str, Encoding] = {
    "zrle": Encoding.ZRLE,
    "copyrect": Encoding.COPY_RECT,
    "raw": Encoding.RAW,
}
DEFAULT_ENCODINGS: tuple[str, ...] = ("zrle", "copyrect", "raw")
# Always announced. Cursor: the server then sends the pointer's shape apart
# instead of painting it into the framebuffer, so captures show no pointer,
# like the other backends' captures. Not ExtendedDesktopSize: TigerVNC answers
# every non-incremental request with that rectangle alone, never the pixels.
PSEUDO_ENCODINGS: tuple[Encoding, ...] = (
    Encoding.DESKTOP_SIZE,
    Encoding.LAST_RECT,
    Encoding.DESKTOP_NAME,
    Encoding.CURSOR,
    Encoding.QEMU_EXTENDED_KEY_EVENT,
    Encoding.EXTENDED_MOUSE_BUTTONS,
)


@dataclass(frozen=True)
class ServerInfo:
    """Who we talk to."""

    host: str
    port: int
    version: Version
    name: str
    security: Security
    # It acknowledged QEMU's extended key events: TigerVNC and its kin do, and
    # QEMU; libvncserver (x11vnc) does not. Tells server families apart.
    qemu_key_events: bool = False
    # It acknowledged ExtendedMouseButtons: pointer events may carry buttons 8
    # and 9 (back, forward). TigerVNC 1.15 and later do.
    extended_mouse_buttons: bool = False

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def describe(self) -> str:
        return f"the VNC server {self.name!r} at {self.address} (RFB {self.version})"


@dataclass(frozen=True)
class Greeting:
    """What the handshake learnt: who the server is and its framebuffer's size."""

    info: ServerInfo
    width: int
    height: int


def handshake(
    read: Callable[[int], bytes],
    sendall: Callable[[bytes], None],
    host: str,
    port: int,
    password: str | None,
    shared: bool,
    encodings: list[int],
) -> Greeting:
    """Version, security and ServerInit; then this client's pixel format and encodings.
    RfbError (AuthenticationError for credentials) says what failed and the fix."""
    address = f"{host}:{port}"
    try:
        server_version = Version.parse(read(VERSION_LENGTH))
        version = server_version.negotiate()
        sendall(version.encode())
        security = _security(read, sendall, address, version, password)
        sendall(b"\x01" if shared else b"\x00")
        width, height, pixel_format, name_length = SERVER_INIT_HEAD.unpack(
            read(SERVER_INIT_HEAD.size)
        )
        name = read(name_length).decode("utf-8", errors="replace")
        sendall(set_pixel_format(BGRX))
        sendall(set_encodings(encodings + [int(e) for e in PSEUDO_ENCODINGS]))
    except ProtocolError as error:
        raise RfbError(
            f"{address} does not speak VNC as expected: {error}",
            "check the address and port: it must be a VNC (RFB) server",
        ) from error
    except (OSError, ConnectionLostError) as error:
        raise RfbError(
            f"the VNC handshake with {address} failed: {why(error)}",
            "check that the server runs, accepts this client (some allow one viewer "
            "only, or block an address after failed logins) and speaks RFB",
        ) from error
    log.debug("VNC %s: %s, %dx%d, %s", address, name, width, height, pixel_format.hex())
    return Greeting(ServerInfo(host, port, server_version, name, security), width, height)


def _security(
    read: Callable[[int], bytes],
    sendall: Callable[[bytes], None],
    address: str,
    version: Version,
    password: str | None,
) -> Security:
    if version == Version(3, 3):
        (offered_type,) = U32.unpack(read(4))
        offered = [offered_type] if offered_type else []
    else:
        offered = list(read(read(1)[0]))
    if not offered:
        reason = _read_string(read)
        raise RfbError(
            f"{address} refused the connection: {reason or 'no reason given'}",
            "see the server's log; it may allow a limited number of viewers",
        )
    chosen = _choose_security(offered, password, address)
    if version != Version(3, 3):
        sendall(bytes([chosen]))
    if chosen == Security.VNC_AUTH:
        assert password is not None  # _choose_security checked
        sendall(vnc_auth_response(password, read(CHALLENGE_LENGTH)))
    if version == Version(3, 8) or chosen == Security.VNC_AUTH:
        (result,) = U32.unpack(read(4))
        if result != 0:
            reason = _read_string(read) if version == Version(3, 8) else ""
            raise AuthenticationError(
                f"{address} rejected the VNC password" + (f": {reason}" if reason else ""),
                "check the password (argument `password` or $HOLODESK_VNC_PASSWORD); VNC "
                "compares only its first 8 characters, and after repeated failures a "
                "server may refuse this address for a while",
            )
    return chosen


def _read_string(read: Callable[[int], bytes]) -> str:
    (length,) = U32.unpack(read(4))
    return read(length).decode("utf-8", errors="replace")


def encoding_numbers(names: Sequence[str]) -> list[int]:
    unknown = [name for name in names if name not in ENCODINGS]
    if unknown or not names:
        raise ValueError(
            f"VNC encodings must be chosen from {', '.join(ENCODINGS)}; got {list(names)}"
        )
    numbers = [int(ENCODINGS[name]) for name in names]
    if Encoding.RAW not in numbers:
        numbers.append(int(Encoding.RAW))  # every server may fall back to Raw
    return numbers


def _choose_security(offered: list[int], password: str | None, address: str) -> Security:
    if Security.NONE in offered:
        return Security.NONE
    if Security.VNC_AUTH in offered:
        if password is None:
            raise AuthenticationError(
                f"{address} requires a VNC password",
                "pass password=... or set $HOLODESK_VNC_PASSWORD",
            )
        return Security.VNC_AUTH
    names = ", ".join(security_name(value) for value in offered)
    raise RfbError(
        f"{address} offers only the security types {names}; this client speaks only "
        "none and vnc-auth",
        "allow one of them on the server (TigerVNC: -SecurityTypes VncAuth or None; "
        "wrap the connection in an SSH tunnel for encryption)",
    )
