"""RFB (RFC 6143) wire formats: constants, message packing, the VNC-auth response.

Pure functions over bytes, no sockets, so every layout here is unit-testable.
All integers on the wire are big-endian.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher, modes

VERSION_LENGTH = 12
CHALLENGE_LENGTH = 16


class ProtocolError(Exception):
    """The server sent something this client cannot follow."""


class Security(enum.IntEnum):
    """Security types (IANA registry); only NONE and VNC_AUTH are spoken here."""

    INVALID = 0
    NONE = 1
    VNC_AUTH = 2
    RA2 = 5
    RA2NE = 6
    TIGHT = 16
    ULTRA = 17
    TLS = 18
    VENCRYPT = 19
    SASL = 20
    MD5 = 21
    XVP = 22
    ARD = 30
    MS_LOGON2 = 113


def security_name(value: int) -> str:
    """A readable name for a security type number, known or not."""
    try:
        return Security(value).name.replace("_", "-").lower()
    except ValueError:
        return f"type {value}"


class Encoding(enum.IntEnum):
    """Rectangle encodings and pseudo-encodings this client understands."""

    RAW = 0
    COPY_RECT = 1
    ZRLE = 16
    CURSOR = -239
    DESKTOP_SIZE = -223
    LAST_RECT = -224
    QEMU_EXTENDED_KEY_EVENT = -258
    DESKTOP_NAME = -307
    EXTENDED_DESKTOP_SIZE = -308  # parsed if sent, never asked for (see client)
    EXTENDED_MOUSE_BUTTONS = -316


class ServerMessage(enum.IntEnum):
    FRAMEBUFFER_UPDATE = 0
    SET_COLOUR_MAP_ENTRIES = 1
    BELL = 2
    SERVER_CUT_TEXT = 3


class ClientMessage(enum.IntEnum):
    SET_PIXEL_FORMAT = 0
    SET_ENCODINGS = 2
    FRAMEBUFFER_UPDATE_REQUEST = 3
    KEY_EVENT = 4
    POINTER_EVENT = 5
    CLIENT_CUT_TEXT = 6


@dataclass(frozen=True)
class Version:
    major: int
    minor: int

    @classmethod
    def parse(cls, data: bytes) -> Version:
        """Read "RFB xxx.yyy\\n"; anything else is not an RFB server."""
        if len(data) != VERSION_LENGTH or not data.startswith(b"RFB ") or data[-1:] != b"\n":
            raise ProtocolError(f"not an RFB (VNC) server: it greeted with {data!r}")
        try:
            major, minor = (int(part) for part in data[4:11].split(b"."))
        except ValueError:
            raise ProtocolError(f"not an RFB (VNC) server: it greeted with {data!r}") from None
        return cls(major, minor)

    def negotiate(self) -> Version:
        """The version this client answers with: the server's, capped at 3.8.

        Apple sends 3.889 and RealVNC 4.x/5.x; both accept 3.8. A server
        older than 3.3 does not exist in practice, and 3.4-3.6 mean 3.3.
        """
        if (self.major, self.minor) < (3, 3):
            raise ProtocolError(f"RFB {self} is older than 3.3, the oldest version there is")
        if (self.major, self.minor) >= (3, 8):
            return Version(3, 8)
        if self.minor >= 7:
            return Version(3, 7)
        return Version(3, 3)

    def encode(self) -> bytes:
        return f"RFB {self.major:03d}.{self.minor:03d}\n".encode("ascii")

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


@dataclass(frozen=True)
class PixelFormat:
    """PIXEL_FORMAT (16 bytes on the wire)."""

    bits_per_pixel: int
    depth: int
    big_endian: bool
    true_colour: bool
    red_max: int
    green_max: int
    blue_max: int
    red_shift: int
    green_shift: int
    blue_shift: int

    _STRUCT = struct.Struct(">BBBBHHHBBB3x")

    @classmethod
    def parse(cls, data: bytes) -> PixelFormat:
        bpp, depth, big, true_colour, rmax, gmax, bmax, rs, gs, bs = cls._STRUCT.unpack(data)
        return cls(bpp, depth, bool(big), bool(true_colour), rmax, gmax, bmax, rs, gs, bs)

    def encode(self) -> bytes:
        return self._STRUCT.pack(
            self.bits_per_pixel,
            self.depth,
            self.big_endian,
            self.true_colour,
            self.red_max,
            self.green_max,
            self.blue_max,
            self.red_shift,
            self.green_shift,
            self.blue_shift,
        )


# The one format this client asks for: 32-bit little-endian true colour with red
# in bits 16-23, so each pixel is the bytes B, G, R, X in memory (numpy- and
# PIL-friendly, "BGRX"), and ZRLE's compressed pixel is the first three bytes.
BGRX = PixelFormat(32, 24, False, True, 255, 255, 255, 16, 8, 0)
BYTES_PER_PIXEL = 4


@dataclass(frozen=True)
class ServerInit:
    width: int
    height: int
    pixel_format: PixelFormat
    name: str


SERVER_INIT_HEAD = struct.Struct(">HH16sI")
RECT_HEAD = struct.Struct(">HHHHi")
UPDATE_HEAD = struct.Struct(">xH")  # after the message-type byte
CUT_TEXT_HEAD = struct.Struct(">3xI")
COLOUR_MAP_HEAD = struct.Struct(">xHH")
U32 = struct.Struct(">I")
U16_PAIR = struct.Struct(">HH")
SCREEN = struct.Struct(">IHHHHI")


def set_pixel_format(pixel_format: PixelFormat) -> bytes:
    return struct.pack(">B3x", ClientMessage.SET_PIXEL_FORMAT) + pixel_format.encode()


def set_encodings(encodings: list[int]) -> bytes:
    head = struct.pack(">BxH", ClientMessage.SET_ENCODINGS, len(encodings))
    return head + struct.pack(f">{len(encodings)}i", *encodings)


def update_request(incremental: bool, x: int, y: int, width: int, height: int) -> bytes:
    return struct.pack(
        ">BBHHHH", ClientMessage.FRAMEBUFFER_UPDATE_REQUEST, incremental, x, y, width, height
    )


def key_event(keysym: int, down: bool) -> bytes:
    return struct.pack(">BB2xI", ClientMessage.KEY_EVENT, down, keysym)


# Buttons 8 and 9 in a button mask (bit n is X button n+1).
BUTTON_8, BUTTON_9 = 1 << 7, 1 << 8
_LOW_BUTTONS = 0x7F
EXTENDED_MARKER = 0x80


def pointer_event(x: int, y: int, mask: int, extended: bool = False) -> bytes:
    """A PointerEvent; `mask` holds X buttons 1-9, bit n for button n+1.

    The plain message has one mask byte, so buttons 1-8. `extended`: the server
    acknowledged the ExtendedMouseButtons pseudo-encoding (-316). Then bit 7 of
    that byte is a marker instead of button 8, and when set, one more byte
    follows with buttons 8 and 9 in its bits 0 and 1 (as TigerVNC 1.15's
    CMsgWriter and SMsgReader have it). Only a mask holding button 8 or 9 takes
    the longer form; the marker must be clear in every other one.
    """
    if not 0 <= mask <= _LOW_BUTTONS | BUTTON_8 | BUTTON_9:
        raise ValueError(f"a button mask holds buttons 1-9, not {mask:#x}")
    if extended and mask & (BUTTON_8 | BUTTON_9):
        low = mask & _LOW_BUTTONS | EXTENDED_MARKER
        return struct.pack(">BBHHB", ClientMessage.POINTER_EVENT, low, x, y, mask >> 7)
    if mask & BUTTON_9:
        raise ValueError("button 9 fits in a PointerEvent only with ExtendedMouseButtons")
    return struct.pack(">BBHH", ClientMessage.POINTER_EVENT, mask, x, y)


def vnc_auth_response(password: str, challenge: bytes) -> bytes:
    """DES-encrypt the 16-byte challenge with the password, as VNC authentication does.

    The key is the password's first 8 bytes (zero-padded) with the bits of each
    byte mirrored: VNC's original DES code read key bits least significant first.
    Single DES is spelled as triple DES with the key three times (K1=K2=K3).
    """
    if len(challenge) != CHALLENGE_LENGTH:
        raise ProtocolError(f"a VNC challenge is 16 bytes, this one is {len(challenge)}")
    # UTF-8, as vncpasswd stores what a UTF-8 terminal typed; only 8 bytes count.
    raw = password.encode("utf-8")[:8].ljust(8, b"\0")
    key = bytes(_mirror(byte) for byte in raw)
    encryptor = Cipher(TripleDES(key * 3), modes.ECB()).encryptor()
    return encryptor.update(challenge) + encryptor.finalize()


def _mirror(byte: int) -> int:
    return int(f"{byte:08b}"[::-1], 2)
