"""A small scripted RFB server on a real socket, for what real servers here cannot show.

It plays the servers that cannot run on this machine (QEMU, Apple Screen
Sharing, RFB 3.3 and 3.7 servers, servers offering only TLS) and the
situations a real one will not produce on cue (a resize between two
requests, garbage, a ZRLE stream of every tile kind). It speaks the wire
protocol independently of the client under test: its packing is its own.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher, modes

Rgb = npt.NDArray[np.uint8]

RAW, COPY_RECT, ZRLE = 0, 1, 16
DESKTOP_SIZE, LAST_RECT, CURSOR, DESKTOP_NAME = -223, -224, -239, -307
QEMU_EXTENDED_KEY_EVENT, EXTENDED_MOUSE_BUTTONS = -258, -316


@dataclass(frozen=True)
class KeyEvent:
    keysym: int
    down: bool


@dataclass(frozen=True)
class PointerEvent:
    x: int
    y: int
    mask: int  # bit n: X button n+1 (9 buttons with ExtendedMouseButtons)
    extended: bool = False  # it came in the 7-byte ExtendedMouseButtons form


@dataclass(frozen=True)
class UpdateRequest:
    incremental: bool
    x: int
    y: int
    width: int
    height: int


Event = KeyEvent | PointerEvent | UpdateRequest


def vnc_des(password: str, challenge: bytes) -> bytes:
    """The expected VNC-auth response, computed here on its own terms."""
    key = bytes(int(f"{b:08b}"[::-1], 2) for b in password.encode()[:8].ljust(8, b"\0"))
    encryptor = Cipher(TripleDES(key * 3), modes.ECB()).encryptor()
    return encryptor.update(challenge) + encryptor.finalize()


@dataclass
class FakeRfbServer:
    """Serves one connection at a time on 127.0.0.1; `events` records what clients sent."""

    version: bytes = b"RFB 003.008\n"
    security: tuple[int, ...] = (1,)
    password: str | None = None
    name: str = "fake desktop"
    width: int = 96
    height: int = 64
    encoding: int = RAW
    # Updates carry this header rectangle first when set (e.g. a cursor shape).
    greeting: bytes | None = None
    # Speak ExtendedMouseButtons (-316) as TigerVNC 1.15 does: acknowledge it in the
    # next update once the client asks for it, then read pointer events with the
    # marker bit set as 7 bytes, buttons 8 and 9 in the last one.
    extended_mouse_buttons: bool = False
    events: list[Event] = field(default_factory=list)
    encodings: list[int] = field(default_factory=list)
    connections: int = 0
    pixels: Rgb = field(init=False)
    _pending_size: tuple[int, int] | None = field(default=None, init=False)
    _acknowledged: bool = field(default=False, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _listener: socket.socket | None = field(default=None, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)
    _client: socket.socket | None = field(default=None, init=False)
    _respond: Callable[[socket.socket, UpdateRequest], None] | None = field(
        default=None, init=False
    )

    def __post_init__(self) -> None:
        self.pixels = pattern(self.width, self.height)

    # -- control ------------------------------------------------------------------------
    def start(self) -> int:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        return int(self._listener.getsockname()[1])

    def stop(self) -> None:
        if self._listener is not None:
            # shutdown() wakes a thread blocked in accept(); close() alone does not.
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
        self.drop()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def drop(self) -> None:
        """Close the current connection, as a crashing server would."""
        client = self._client
        if client is not None:
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)
            client.close()

    def resize(self, width: int, height: int) -> None:
        """The next update request is answered with a DesktopSize alone (as TigerVNC does)."""
        with self._lock:
            self.width, self.height = width, height
            self.pixels = pattern(width, height)
            self._pending_size = (width, height)

    def respond_with(self, respond: Callable[[socket.socket, UpdateRequest], None]) -> None:
        """Answer update requests with `respond` instead of the pixels."""
        self._respond = respond

    def key_events(self) -> list[KeyEvent]:
        return [e for e in list(self.events) if isinstance(e, KeyEvent)]

    def pointer_events(self) -> list[PointerEvent]:
        return [e for e in list(self.events) if isinstance(e, PointerEvent)]

    # -- serving ------------------------------------------------------------------------
    def _serve(self) -> None:
        assert self._listener is not None
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._client = client
            self.connections += 1
            self._acknowledged = False
            with contextlib.suppress(OSError, ConnectionError), client:
                self._session(client)

    def _session(self, sock: socket.socket) -> None:
        sock.sendall(self.version)
        answer = _read(sock, 12)
        if self.version == b"RFB 003.003\n":
            sock.sendall(struct.pack(">I", self.security[0] if self.security else 0))
            if not self.security:
                sock.sendall(_string("no security for you"))
                return
            chosen = self.security[0]
        else:
            sock.sendall(bytes([len(self.security), *self.security]))
            if not self.security:
                sock.sendall(_string("server full"))
                return
            chosen = _read(sock, 1)[0]
        minor = int(answer[8:11])
        if chosen == 2:
            challenge = bytes(range(16))
            sock.sendall(challenge)
            response = _read(sock, 16)
            ok = self.password is not None and response == vnc_des(self.password, challenge)
            sock.sendall(struct.pack(">I", 0 if ok else 1))
            if not ok:
                if minor >= 8:
                    sock.sendall(_string("Authentication failure"))
                return
        elif minor >= 8:
            sock.sendall(struct.pack(">I", 0))
        _read(sock, 1)  # ClientInit
        name = self.name.encode()
        sock.sendall(struct.pack(">HH", self.width, self.height))
        sock.sendall(struct.pack(">BBBBHHHBBB3x", 32, 24, 0, 1, 255, 255, 255, 16, 8, 0))
        sock.sendall(struct.pack(">I", len(name)) + name)
        self._messages(sock)

    def _messages(self, sock: socket.socket) -> None:
        zlib_stream = zlib.compressobj()
        while True:
            kind = _read(sock, 1)[0]
            if kind == 0:
                _read(sock, 19)
            elif kind == 2:
                (count,) = struct.unpack(">xH", _read(sock, 3))
                self.encodings = list(struct.unpack(f">{count}i", _read(sock, 4 * count)))
            elif kind == 3:
                incremental, x, y, w, h = struct.unpack(">BHHHH", _read(sock, 9))
                request = UpdateRequest(bool(incremental), x, y, w, h)
                self.events.append(request)
                if self._respond is not None:
                    self._respond(sock, request)
                else:
                    self._update(sock, request, zlib_stream)
            elif kind == 4:
                down, keysym = struct.unpack(">B2xI", _read(sock, 7))
                self.events.append(KeyEvent(keysym, bool(down)))
            elif kind == 5:
                mask, x, y = struct.unpack(">BHH", _read(sock, 5))
                if self._extended_buttons() and mask & 0x80:
                    high = _read(sock, 1)[0]
                    self.events.append(PointerEvent(x, y, high << 7 | mask & 0x7F, True))
                else:
                    self.events.append(PointerEvent(x, y, mask))
            elif kind == 6:
                (length,) = struct.unpack(">3xI", _read(sock, 7))
                _read(sock, length)
            else:
                return

    def _extended_buttons(self) -> bool:
        return self.extended_mouse_buttons and EXTENDED_MOUSE_BUTTONS in self.encodings

    def _update(self, sock: socket.socket, request: UpdateRequest, stream: zlib._Compress) -> None:
        with self._lock:
            pending, self._pending_size = self._pending_size, None
            pixels = self.pixels.copy()
        if pending is not None and DESKTOP_SIZE in self.encodings:
            sock.sendall(struct.pack(">BxH", 0, 1) + rect_head(0, 0, *pending, DESKTOP_SIZE))
            return
        x, y, w, h = request.x, request.y, request.width, request.height
        if request.incremental:
            # Nothing ever changes by itself here: answer the 1-pixel probe only.
            return
        rects = [self.greeting] if self.greeting else []
        if self._extended_buttons() and not self._acknowledged:
            rects.append(rect_head(0, 0, 0, 0, EXTENDED_MOUSE_BUTTONS))
            self._acknowledged = True
        region = pixels[y : y + h, x : x + w]
        if self.encoding == ZRLE:
            body = zrle_rect(region, stream)
            rects.append(rect_head(x, y, w, h, ZRLE) + struct.pack(">I", len(body)) + body)
        else:
            rects.append(rect_head(x, y, w, h, RAW) + raw_pixels(region))
        sock.sendall(struct.pack(">BxH", 0, len(rects)) + b"".join(rects))


def serve(server: FakeRfbServer) -> Iterator[tuple[FakeRfbServer, int]]:
    port = server.start()
    try:
        yield server, port
    finally:
        server.stop()


# -- encoders (the test side's own, for the client's decoders) -----------------------------
def pattern(width: int, height: int) -> Rgb:
    """Pixels that differ in x and y, so a misplaced rectangle shows."""
    ys, xs = np.mgrid[0:height, 0:width]
    return np.stack([(xs * 7) % 256, (ys * 13) % 256, (xs + ys) % 256], axis=2).astype(np.uint8)


def rect_head(x: int, y: int, w: int, h: int, encoding: int) -> bytes:
    return struct.pack(">HHHHi", x, y, w, h, encoding)


def raw_pixels(region: Rgb) -> bytes:
    """RGB -> the client's BGRX wire format."""
    bgrx = np.zeros((*region.shape[:2], 4), dtype=np.uint8)
    bgrx[..., :3] = region[..., ::-1]
    return bgrx.tobytes()


def cpixel(rgb: Rgb) -> bytes:
    return bytes([int(rgb[2]), int(rgb[1]), int(rgb[0])])


def run_bytes(length: int) -> bytes:
    """A ZRLE run length: (length - 1) as 255s and a remainder."""
    rest = length - 1
    return b"\xff" * (rest // 255) + bytes([rest % 255])


def zrle_tile(tile: Rgb, kind: str) -> bytes:
    """One tile in the named subencoding: raw, solid, packed, rle, palette_rle."""
    flat = tile.reshape(-1, 3)
    h, w = tile.shape[:2]
    if kind == "raw":
        return b"\x00" + b"".join(cpixel(p) for p in flat)
    if kind == "solid":
        return b"\x01" + cpixel(flat[0])
    colours = list(dict.fromkeys(cpixel(p) for p in flat))
    if kind == "packed":
        bits = 1 if len(colours) == 2 else 2 if len(colours) <= 4 else 4
        out = bytes([len(colours)]) + b"".join(colours)
        for row in range(h):
            value, filled, packed = 0, 0, bytearray()
            for col in range(w):
                value = (value << bits) | colours.index(cpixel(tile[row, col]))
                filled += bits
                if filled == 8:
                    packed.append(value)
                    value, filled = 0, 0
            if filled:
                packed.append(value << (8 - filled))
            out += bytes(packed)
        return out
    runs: list[tuple[bytes, int]] = []
    for p in flat:
        c = cpixel(p)
        if runs and runs[-1][0] == c:
            runs[-1] = (c, runs[-1][1] + 1)
        else:
            runs.append((c, 1))
    if kind == "rle":
        return b"\x80" + b"".join(c + run_bytes(n) for c, n in runs)
    if kind == "palette_rle":
        out = bytes([128 + len(colours)]) + b"".join(colours)
        for c, n in runs:
            index = colours.index(c)
            out += bytes([index]) if n == 1 else bytes([index | 0x80]) + run_bytes(n)
        return out
    raise ValueError(kind)


def zrle_rect(region: Rgb, stream: zlib._Compress, kinds: tuple[str, ...] = ("raw",)) -> bytes:
    """A ZRLE rectangle body (without its length), tiles in `kinds` round-robin."""
    h, w = region.shape[:2]
    tiles = b""
    number = 0
    for top in range(0, h, 64):
        for left in range(0, w, 64):
            tiles += zrle_tile(region[top : top + 64, left : left + 64], kinds[number % len(kinds)])
            number += 1
    return stream.compress(tiles) + stream.flush(zlib.Z_SYNC_FLUSH)


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">I", len(data)) + data


def _read(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("client went away")
        data += chunk
    return data
