"""A compact RFB 3.3/3.7/3.8 client: handshake, framebuffer, pointer and key events.

One TCP connection, one reader thread. The reader decodes every server message
into the numpy framebuffer; callers (any thread) send input and ask for fresh
pixels. Nothing is streamed unasked: updates flow only when a capture asks for
them, so an idle session costs no bandwidth.

A capture must see the screen as it is *now*, yet an incremental update request
may go unanswered while nothing changes. So a capture sends two requests: an
incremental one for the whole framebuffer (everything that changed) and a
non-incremental one for a single pixel of the region (which the server must
answer). Servers answer with all pending changes inside the requested area
(TigerVNC and libvncserver both merge the two), and TCP keeps order, so once an
update covering that pixel has been applied, every change made before the
capture began is in the framebuffer.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace

import numpy as np
from PIL import Image

from holodesk.platform.vnc.errors import RETRY, ConnectionLostError, RfbError
from holodesk.platform.vnc.framebuffer import Framebuffer, Pixels
from holodesk.platform.vnc.handshake import (
    DEFAULT_ENCODINGS,
    ServerInfo,
    encoding_numbers,
    handshake,
)
from holodesk.platform.vnc.protocol import (
    BYTES_PER_PIXEL,
    COLOUR_MAP_HEAD,
    CUT_TEXT_HEAD,
    RECT_HEAD,
    SCREEN,
    U16_PAIR,
    U32,
    UPDATE_HEAD,
    Encoding,
    ProtocolError,
    ServerMessage,
    key_event,
    pointer_event,
    update_request,
)
from holodesk.platform.vnc.zrle import ZrleDecoder

log = logging.getLogger(__name__)

_RECV_CHUNK = 1 << 20
_MANY_RECTS = 0xFFFF  # with LastRect: "count unknown, read until a LastRect"
_MAX_ASKS = 20  # update requests one capture may send before it gives up


class RfbClient:
    """One RFB connection; open with `RfbClient.connect(...)`, end with `close()`."""

    def __init__(self, sock: socket.socket, host: str, port: int, timeout_s: float) -> None:
        self._sock = sock
        self._host = host
        self._port = port
        self._timeout_s = timeout_s
        self._buffer = bytearray()
        self._send_lock = threading.Lock()
        self._cond = threading.Condition()
        self._error: ConnectionLostError | None = None
        self._closing = False
        self._framebuffer = Framebuffer(0, 0)
        self._zrle = ZrleDecoder()
        self._size_generation = 0
        self._need_full = True
        self._barrier: tuple[int, int] | None = None
        self._barrier_met = False
        self._unanswered = False
        self._info: ServerInfo | None = None
        self._reader: threading.Thread | None = None
        self.cut_text = ""  # the server's clipboard, as last announced

    # -- connecting ------------------------------------------------------------------------
    @classmethod
    def connect(
        cls,
        host: str,
        port: int,
        password: str | None = None,
        *,
        encodings: Sequence[str] = DEFAULT_ENCODINGS,
        timeout_s: float = 10.0,
        shared: bool = True,
    ) -> RfbClient:
        """Connect, authenticate and start reading; raises RfbError saying why not."""
        wanted = encoding_numbers(encodings)
        try:
            sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as error:
            raise RfbError(
                f"cannot connect to a VNC server at {host}:{port}: {error}",
                "check that the server runs and listens there (VNC display N listens on "
                "port 5900+N) and that no firewall blocks it",
            ) from error
        client = cls(sock, host, port, timeout_s)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            greeting = handshake(
                client._read, client._sendall, host, port, password, shared, wanted
            )
            client._info = greeting.info
            client._framebuffer.resize(greeting.width, greeting.height)
        except BaseException:
            client._sock.close()
            raise
        client._start_reader()
        try:
            # One small round trip: what the server acknowledges tells who it is.
            client.refresh(0, 0, 1, 1, timeout_s, probe=True)
        except BaseException:
            client.close()
            raise
        return client

    def _start_reader(self) -> None:
        self._sock.settimeout(self._timeout_s)
        self._reader = threading.Thread(
            target=self._read_loop, name=f"holodesk-vnc-reader-{self.address}", daemon=True
        )
        self._reader.start()

    # -- state -------------------------------------------------------------------------------
    @property
    def address(self) -> str:
        return f"{self._host}:{self._port}"

    @property
    def info(self) -> ServerInfo:
        assert self._info is not None, "connect() sets it"
        with self._cond:
            return self._info

    @property
    def size(self) -> tuple[int, int]:
        """The framebuffer's width and height, as the server last announced."""
        with self._cond:
            return self._framebuffer.width, self._framebuffer.height

    @property
    def alive(self) -> bool:
        with self._cond:
            return self._error is None

    def error(self) -> ConnectionLostError | None:
        """Why the connection ended, if it did."""
        with self._cond:
            return self._error

    # -- input ---------------------------------------------------------------------------------
    def pointer(self, x: int, y: int, buttons: int) -> None:
        """A pointer event; `buttons` has bit n set for X button n+1 held (1-9)."""
        self._send(pointer_event(x, y, buttons, self.info.extended_mouse_buttons))

    def keys(self, events: Iterable[tuple[int, bool]]) -> None:
        """Key events (keysym, down), sent in one write."""
        self._send(b"".join(key_event(keysym, down) for keysym, down in events))

    # -- capture -------------------------------------------------------------------------------
    def snapshot(self, x: int, y: int, width: int, height: int, timeout_s: float) -> Image.Image:
        """The region as the screen shows it now (see the module docstring)."""
        with self._cond:
            self.refresh(x, y, width, height, timeout_s)
            return self._framebuffer.crop(x, y, width, height)

    def sync(self, timeout_s: float) -> tuple[int, int]:
        """Catch up with the server (a resize, above all); the size then."""
        with self._cond:
            self.refresh(0, 0, 1, 1, timeout_s)
            return self._framebuffer.width, self._framebuffer.height

    def refresh(
        self, x: int, y: int, width: int, height: int, timeout_s: float, probe: bool = False
    ) -> None:
        """Bring the region of the framebuffer up to date with the screen.

        `probe`: only the 1-pixel request, to hear from the server cheaply.
        """
        deadline = time.monotonic() + timeout_s
        asked = 0
        with self._cond:
            self._barrier, self._barrier_met, self._unanswered = (x, y), False, True
            generation = -1
            try:
                while not self._barrier_met or generation != self._size_generation:
                    self._raise_if_lost()
                    if generation != self._size_generation or self._unanswered:
                        # First round, a resize, or an update that did not answer us
                        # (a size, cursor or name change answers a request alone).
                        if asked == _MAX_ASKS:
                            raise RfbError(
                                f"{self.address} answered {asked} update requests without "
                                "the pixels asked for",
                                "report it with the server's name and version",
                            )
                        generation = self._size_generation
                        self._barrier_met, self._unanswered = False, False
                        if probe:
                            self._send(update_request(False, x, y, 1, 1))
                        else:
                            self._send(self._update_requests(x, y, width, height))
                        asked += 1
                        continue
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise RfbError(
                            f"{self.address} sent no framebuffer update within {timeout_s:.0f} s",
                            "the server or the network is stalled; check both, or allow "
                            "more time (update_timeout_s)",
                        )
                    self._cond.wait(remaining)
            finally:
                self._barrier = None

    def _update_requests(self, x: int, y: int, width: int, height: int) -> bytes:
        """The requests that make the server send the region as it is (caller holds the lock)."""
        fb = self._framebuffer
        if not fb.contains(x, y, width, height):
            raise ValueError(
                f"region {width}x{height}+{x}+{y} lies outside the remote "
                f"{fb.width}x{fb.height} framebuffer"
            )
        if self._need_full:
            self._need_full = False
            return update_request(False, 0, 0, fb.width, fb.height)
        return update_request(True, 0, 0, fb.width, fb.height) + update_request(False, x, y, 1, 1)

    # -- closing -------------------------------------------------------------------------------
    def close(self) -> None:
        with self._cond:
            self._closing = True
            if self._error is None:
                self._error = ConnectionLostError(
                    f"the connection to {self.address} was closed", "open a new one"
                )
            self._cond.notify_all()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout=self._timeout_s)

    # -- sending -------------------------------------------------------------------------------
    def _send(self, data: bytes) -> None:
        with self._send_lock:
            self._raise_if_lost()
            if self._peer_hung_up():
                self._fail(ConnectionLostError(f"{self.address} closed the connection", RETRY))
                self._raise_if_lost()
            try:
                self._sock.sendall(data)
            except OSError as error:
                self._fail(ConnectionLostError(f"sending to {self.address} failed: {error}", RETRY))
                self._raise_if_lost()

    def _sendall(self, data: bytes) -> None:
        """Sending during the handshake, before the reader runs."""
        self._sock.sendall(data)

    def _peer_hung_up(self) -> bool:
        """True once the server closed its end, without consuming anything the reader wants.

        The reader notices too, but a moment later; checking here means an
        event sent to a server that just died raises instead of vanishing.
        """
        events = getattr(select, "POLLRDHUP", 0) | getattr(select, "POLLHUP", 0)
        if not events or not hasattr(select, "poll"):
            return False  # no such check here (Windows): the reader's word must do
        poller = select.poll()
        poller.register(self._sock, events | select.POLLERR)
        return bool(poller.poll(0))

    def _raise_if_lost(self) -> None:
        error = self._error
        if error is not None:
            raise ConnectionLostError(error.message, error.fix) from error

    def _fail(self, error: ConnectionLostError) -> None:
        with self._cond:
            if self._error is None:
                self._error = error
            self._cond.notify_all()

    # -- receiving -----------------------------------------------------------------------------
    def _read(self, count: int) -> bytes:
        """Exactly `count` bytes (blocking), or ConnectionLostError at the end of the stream."""
        while len(self._buffer) < count:
            try:
                chunk = self._sock.recv(max(count - len(self._buffer), _RECV_CHUNK))
            except TimeoutError:
                if self._reader is None or self._closing:
                    raise  # the handshake has a deadline; a closing reader stops
                continue  # idle: servers send nothing unasked
            if not chunk:
                raise ConnectionLostError(f"{self.address} closed the connection", RETRY)
            self._buffer += chunk
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    def _read_string(self) -> str:
        (length,) = U32.unpack(self._read(4))
        return self._read(length).decode("utf-8", errors="replace")

    def _read_loop(self) -> None:
        try:
            while True:
                self._dispatch(self._read(1)[0])
        except ConnectionLostError as error:
            self._fail(error)
        except ProtocolError as error:
            self._fail(
                ConnectionLostError(
                    f"{self.address} sent data this client cannot decode: {error}",
                    "report it with the server's name and version; " + RETRY,
                )
            )
        except OSError as error:
            if not self._closing:
                log.debug("VNC reader for %s stopped: %s", self.address, error)
            self._fail(
                ConnectionLostError(f"the connection to {self.address} broke: {error}", RETRY)
            )
        except Exception as error:  # a bug here must not pass silently as a hang
            log.exception("VNC reader for %s crashed", self.address)
            self._fail(ConnectionLostError(f"the VNC reader crashed: {error!r}", RETRY))

    def _dispatch(self, message: int) -> None:
        if message == ServerMessage.FRAMEBUFFER_UPDATE:
            self._update()
        elif message == ServerMessage.SET_COLOUR_MAP_ENTRIES:
            _, count = COLOUR_MAP_HEAD.unpack(self._read(COLOUR_MAP_HEAD.size))
            self._read(count * 6)  # only for colour-mapped formats, never ours
        elif message == ServerMessage.BELL:
            pass
        elif message == ServerMessage.SERVER_CUT_TEXT:
            (length,) = CUT_TEXT_HEAD.unpack(self._read(CUT_TEXT_HEAD.size))
            if length & 0x80000000:
                raise ProtocolError("extended clipboard data that was never asked for")
            self.cut_text = self._read(length).decode("latin-1")
        else:
            raise ProtocolError(f"unknown server message type {message}")

    def _update(self) -> None:
        (count,) = UPDATE_HEAD.unpack(self._read(UPDATE_HEAD.size))
        covered: list[tuple[int, int, int, int]] = []
        done = 0
        while count == _MANY_RECTS or done < count:
            x, y, width, height, encoding = RECT_HEAD.unpack(self._read(RECT_HEAD.size))
            done += 1
            if encoding == Encoding.LAST_RECT:
                break
            if self._rect(x, y, width, height, encoding):
                covered.append((x, y, width, height))
        with self._cond:
            if self._barrier is not None:
                if any(_covers(rect, *self._barrier) for rect in covered):
                    self._barrier_met = True
                else:
                    self._unanswered = True
            self._cond.notify_all()

    def _rect(self, x: int, y: int, width: int, height: int, encoding: int) -> bool:
        """Apply one rectangle; True when it carried pixels (not a pseudo-encoding)."""
        if encoding == Encoding.RAW:
            data = self._read(width * height * BYTES_PER_PIXEL)
            pixels = np.frombuffer(data, dtype=np.uint8).reshape(height, width, BYTES_PER_PIXEL)
            self._put(x, y, pixels)
        elif encoding == Encoding.COPY_RECT:
            src_x, src_y = U16_PAIR.unpack(self._read(U16_PAIR.size))
            with self._cond:
                self._framebuffer.copy_rect(src_x, src_y, x, y, width, height)
        elif encoding == Encoding.ZRLE:
            (length,) = U32.unpack(self._read(4))
            self._put(x, y, self._zrle.decode(self._read(length), width, height))
        elif encoding == Encoding.CURSOR:
            self._read(width * height * BYTES_PER_PIXEL + (width + 7) // 8 * height)
            return False
        elif encoding == Encoding.DESKTOP_SIZE:
            self._resize(width, height)
            return False
        elif encoding == Encoding.EXTENDED_DESKTOP_SIZE:
            screens = self._read(4)[0]
            self._read(screens * SCREEN.size)
            # y is the status: non-zero answers a resize request of ours (never sent).
            if y == 0:
                self._resize(width, height)
            return False
        elif encoding == Encoding.QEMU_EXTENDED_KEY_EVENT:
            with self._cond:
                assert self._info is not None
                self._info = replace(self._info, qemu_key_events=True)
            return False
        elif encoding == Encoding.EXTENDED_MOUSE_BUTTONS:
            with self._cond:
                assert self._info is not None
                self._info = replace(self._info, extended_mouse_buttons=True)
            return False
        elif encoding == Encoding.DESKTOP_NAME:
            name = self._read_string()
            with self._cond:
                assert self._info is not None
                self._info = replace(self._info, name=name)
            return False
        else:
            raise ProtocolError(f"rectangle encoding {encoding}, which was never offered")
        return True

    def _put(self, x: int, y: int, bgr: Pixels) -> None:
        with self._cond:
            self._framebuffer.put_bgr(x, y, bgr)

    def _resize(self, width: int, height: int) -> None:
        """A size announcement, changed or not.

        Servers answer an update request with the size alone and drop the
        pixels asked for (TigerVNC, libvncserver), so the generation moves
        on either way: a waiting capture asks again, for everything.
        """
        with self._cond:
            if (width, height) != (self._framebuffer.width, self._framebuffer.height):
                log.debug("VNC %s resized to %dx%d", self.address, width, height)
                self._framebuffer.resize(width, height)
            self._size_generation += 1
            self._need_full = True
            self._cond.notify_all()


def _covers(rect: tuple[int, int, int, int], x: int, y: int) -> bool:
    left, top, width, height = rect
    return left <= x < left + width and top <= y < top + height
