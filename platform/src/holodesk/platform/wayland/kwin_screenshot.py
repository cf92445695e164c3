"""Capture through KWin's own screenshot interface, where its screen casts carry no pixels.

KWin 5.27 records a screen-cast frame only when an output presents one (its
Output::outputChange signal), which its DRM and nested-Wayland outputs do and
its headless `--virtual` and X11-nested outputs never do: there a portal
session's PipeWire stream negotiates a format and then sends only cursor
updates (tests/platform/wayland/test_portal_kwin.py). KWin's
org.kde.KWin.ScreenShot2 renders the same scene on request and writes the raw
QImage into a pipe we hand it: no PNG and no file, but a render and read-back
at KWin's next paint per grab, 42 ms p50 for 1280x800 on llvmpipe here, about
what a Screenshot portal call costs (tests/bench/bench_pipewire_capture.py),
where a stream's grab is a frame copy.

KWin lets in only callers it trusts: a process whose executable a desktop
file names with X-KDE-DBUS-Restricted-Interfaces=org.kde.KWin.ScreenShot2
(how Spectacle and xdg-desktop-portal-kde get in), or anyone when KWin runs
with KWIN_SCREENSHOT_NO_PERMISSION_CHECKS=1, which is what a headless KWin
started for agents sets. Anyone else gets NoAuthorized, reported as
ScreenshotRefusedError with that fix.
"""

from __future__ import annotations

import os
import select
import sys
import time
from dataclasses import dataclass
from typing import Any

from PIL import Image

from holodesk.platform.errors import CaptureError, PlatformError
from holodesk.platform.wayland.dbus import DBusCallError, PortalBus, unwrap

KWIN_SCREENSHOT_NAME = "org.kde.KWin.ScreenShot2"
KWIN_SCREENSHOT_PATH = "/org/kde/KWin/ScreenShot2"
KWIN_SCREENSHOT_INTERFACE = "org.kde.KWin.ScreenShot2"
NOT_AUTHORIZED = "org.kde.KWin.ScreenShot2.Error.NoAuthorized"
NO_CHECKS_ENV = "KWIN_SCREENSHOT_NO_PERMISSION_CHECKS"
AUTHORIZE_FIX = (
    f"start kwin_wayland with {NO_CHECKS_ENV}=1 in its environment (a headless KWin "
    "for agents: then any local client may take screenshots), or install a desktop file whose "
    "Exec names this Python interpreter's real path with "
    f"X-KDE-DBUS-Restricted-Interfaces={KWIN_SCREENSHOT_INTERFACE} (which trusts every "
    "program that interpreter runs)"
)
DEFAULT_KWIN_SCREENSHOT_TIMEOUT_S = 10.0
# A side longer than this is no screen KWin can render (GL textures stop at 16384):
# a reply claiming one is refused before a byte of it is read.
MAX_SIDE_PX = 16384
# QImage::Format values KWin sends, as the raw modes Pillow reads their bytes with.
# 32-bit formats are one native-endian word per pixel, 0xAARRGGBB (alpha ignored:
# the screen is opaque); the RGBA8888 ones are bytes in that order.
_WORD_ORDER = "BGRX" if sys.byteorder == "little" else "XRGB"
_RAW_MODES = {
    4: (_WORD_ORDER, 4),  # Format_RGB32
    5: (_WORD_ORDER, 4),  # Format_ARGB32
    6: (_WORD_ORDER, 4),  # Format_ARGB32_Premultiplied
    13: ("RGB", 3),  # Format_RGB888
    16: ("RGBX", 4),  # Format_RGBX8888
    17: ("RGBX", 4),  # Format_RGBA8888
    18: ("RGBX", 4),  # Format_RGBA8888_Premultiplied
}


class ScreenshotRefusedError(CaptureError):
    """KWin does not let this process take screenshots; `fix` says how to allow it."""

    fix = AUTHORIZE_FIX


@dataclass(frozen=True)
class RawImage:
    """What KWin's reply says about the pixels it writes into the pipe."""

    width: int
    height: int
    stride: int
    qimage_format: int
    scale: float = 1.0  # the image's device pixel ratio: the output's scale at native size

    @classmethod
    def from_reply(cls, results: dict[str, Any]) -> RawImage:
        if results.get("type") != "raw":
            raise CaptureError(f"KWin's screenshot is of type {results.get('type')!r}, not raw")
        try:
            header = cls(
                int(results["width"]),
                int(results["height"]),
                int(results["stride"]),
                int(results["format"]),
                float(results.get("scale", 1.0)),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise CaptureError(f"KWin's screenshot reply lacks its geometry: {results}") from error
        if header.qimage_format not in _RAW_MODES:
            raise CaptureError(
                f"KWin sent a screenshot in QImage format {header.qimage_format}, which "
                f"holodesk does not read (it reads {sorted(_RAW_MODES)})"
            )
        _, pixel_bytes = _RAW_MODES[header.qimage_format]
        sides_ok = 0 < header.width <= MAX_SIDE_PX and 0 < header.height <= MAX_SIDE_PX
        row_ok = header.width * pixel_bytes <= header.stride <= (header.width + 64) * pixel_bytes
        if not (sides_ok and row_ok and 0.25 <= header.scale <= 8):
            raise CaptureError(f"KWin's screenshot has an impossible geometry: {header}")
        return header

    @property
    def size_in_bytes(self) -> int:
        return self.stride * self.height

    def image(self, data: bytes) -> Image.Image:
        """The RGB image these bytes are."""
        if len(data) != self.size_in_bytes:
            raise CaptureError(
                f"KWin wrote {len(data)} bytes of a {self.width}x{self.height} screenshot, "
                f"not {self.size_in_bytes}"
            )
        mode, _ = _RAW_MODES[self.qimage_format]
        size = (self.width, self.height)
        # frombytes, not frombuffer: that would map RGBX bytes as an RGBX image, not RGB.
        return Image.frombytes("RGB", size, data, "raw", mode, self.stride, 1)


class KWinScreenshots:
    """Whole-desktop screenshots from KWin's ScreenShot2, in physical pixels.

    Holds its own bus connection (closed by `close`), so a capture never waits
    behind the input calls of a portal session.
    """

    def __init__(
        self, address: str, *, timeout_s: float = DEFAULT_KWIN_SCREENSHOT_TIMEOUT_S
    ) -> None:
        self._bus = PortalBus(address)
        self._timeout_s = timeout_s

    @staticmethod
    def offered(bus: PortalBus) -> bool:
        """Whether a KWin on this bus offers ScreenShot2 (it may still refuse us)."""
        return bus.has_owner(KWIN_SCREENSHOT_NAME)

    def take(self) -> Image.Image:
        """An RGB screenshot of every output, without the cursor."""
        return self.take_scaled()[0]

    def take_scaled(self) -> tuple[Image.Image, float]:
        """A screenshot and KWin's scale for it (physical pixels per logical one)."""
        deadline = time.monotonic() + self._timeout_s
        read_end, write_end = os.pipe()
        try:
            try:
                header = self._capture_into(write_end)
            finally:
                os.close(write_end)  # KWin holds its own copy; EOF comes when it is done
            data = _read_until_eof(read_end, header.size_in_bytes, deadline)
        finally:
            os.close(read_end)
        return header.image(data), header.scale

    def _capture_into(self, pipe: int) -> RawImage:
        """Ask for the whole workspace to be written into `pipe`; what KWin says it wrote."""
        options = {"native-resolution": ("b", True), "include-cursor": ("b", False)}
        try:
            (results,) = self._bus.call(
                KWIN_SCREENSHOT_INTERFACE,
                "CaptureWorkspace",
                "a{sv}h",
                (options, pipe),
                path=KWIN_SCREENSHOT_PATH,
                destination=KWIN_SCREENSHOT_NAME,
                timeout_s=self._timeout_s,
            )
        except DBusCallError as error:
            if error.name == NOT_AUTHORIZED:
                raise ScreenshotRefusedError(
                    f"KWin refused holodesk a screenshot: {error.message}"
                ) from error
            raise CaptureError(f"KWin's ScreenShot2 failed: {error}") from error
        except PlatformError as error:  # the bus itself: closed, lost, or no reply in time
            raise CaptureError(f"KWin's ScreenShot2 failed: {error}") from error
        return RawImage.from_reply({key: unwrap(value) for key, value in results.items()})

    def close(self) -> None:
        self._bus.close()


def _read_until_eof(fd: int, expected: int, deadline: float) -> bytes:
    """What was written into the pipe until its last writer closed it: `expected` bytes,
    or a CaptureError (fewer by the deadline, or more)."""
    chunks: list[bytes] = []
    got = 0
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0 or not poller.poll(left_ms):
            raise CaptureError(
                f"KWin wrote {got} of the screenshot's {expected} bytes before the timeout"
            )
        chunk = os.read(fd, min(expected - got + 1, 1 << 20))  # one more byte shows excess
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        got += len(chunk)
        if got > expected:
            raise CaptureError(f"KWin wrote more than the screenshot's {expected} bytes")
