"""Screen capture through wlr-screencopy: each output copied into a shared-memory buffer.

A capture asks for one frame of an output; the compositor says which buffer it
wants (size, stride, pixel format), copies its next rendered frame into ours and
answers ready or failed. Buffers are kept per output and reused while the
compositor asks for the same shape, so a steady capture costs one copy and one
conversion to RGB per frame, no allocation.
"""

from __future__ import annotations

import select
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from holodesk.platform.base import DisplayInfo, Region, ScreenSource, check_grab
from holodesk.platform.errors import CaptureError
from holodesk.platform.wlroots.connection import SCREENCOPY, WlrConnection
from holodesk.platform.wlroots.outputs import Output
from holodesk.platform.wlroots.shm import ShmBuffer

DEFAULT_FRAME_TIMEOUT_S = 5.0
_Y_INVERT = 1
# wl_shm formats (the two every compositor supports are 0 and 1; the rest are DRM
# fourccs) -> PIL raw modes for their little-endian byte order.
_RAW_MODES: dict[int, str] = {
    0: "BGRX",  # ARGB8888 (alpha ignored: a screen is opaque)
    1: "BGRX",  # XRGB8888
    0x34324241: "RGBX",  # ABGR8888
    0x34324258: "RGBX",  # XBGR8888
}


@dataclass
class _Frame:
    """What the compositor said about one screencopy frame."""

    shm: tuple[int, int, int, int] | None = None  # format, width, height, stride
    flags: int = 0
    buffer_done: bool = False
    ready: bool = False
    failed: bool = False
    events: list[str] = field(default_factory=list)


class WlrScreen(ScreenSource):
    """The outputs of a wlroots compositor, read with wlr-screencopy."""

    def __init__(
        self,
        connection: WlrConnection,
        *,
        frame_timeout_s: float = DEFAULT_FRAME_TIMEOUT_S,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._connection = connection
        self._timeout_s = frame_timeout_s
        self._buffers: dict[str, ShmBuffer] = {}
        self._on_close = on_close

    def displays(self) -> list[DisplayInfo]:
        self._connection.roundtrip()  # outputs added, moved or rescaled since
        return self._connection.layout().displays()

    def grab(self, region: Region) -> Image.Image:
        self._connection.roundtrip()
        layout = self._connection.layout()
        check_grab(region, self.virtual_desktop())
        canvas = Image.new("RGB", (region.width, region.height))
        for output in layout.outputs:
            bounds = layout.bounds(output)
            overlap = _intersection(bounds, region)
            if overlap is None:
                continue
            image = self.capture(output)
            piece = image.crop(
                (overlap.x - bounds.x, overlap.y - bounds.y,
                 overlap.right - bounds.x, overlap.bottom - bounds.y)
            )  # fmt: skip
            canvas.paste(piece, (overlap.x - region.x, overlap.y - region.y))
        return canvas

    def capture(self, output: Output) -> Image.Image:
        """One frame of `output`, in its physical pixels."""
        connection = self._connection
        with connection.lock:
            if connection.transform_of(output.name):
                raise CaptureError(
                    f"output {output.name} is rotated or flipped, which this capture does "
                    "not undo yet: set its transform to normal"
                )
            manager = connection.bound[SCREENCOPY]
            frame_proxy = manager.capture_output(0, connection.output_proxy(output.name))
            frame = _Frame()
            _listen(frame_proxy, frame)
            try:
                # Version 3 lists every buffer type it offers, then says buffer_done.
                def shaped() -> bool:
                    return frame.shm is not None and (frame.buffer_done or manager.version < 3)

                self._wait(lambda: frame.failed or shaped(), output, "its buffer shape")
                if frame.failed or frame.shm is None:
                    raise CaptureError(f"the compositor refused to capture output {output.name}")
                buffer = self._buffer(output.name, *frame.shm)
                frame_proxy.copy(buffer.buffer)
                self._wait(lambda: frame.ready or frame.failed, output, "the frame")
                if not frame.ready:
                    raise CaptureError(f"capturing output {output.name} failed (screencopy)")
                return _image(buffer, frame.flags)
            finally:
                frame_proxy.destroy()
                connection.display.flush()

    def _buffer(self, name: str, format: int, width: int, height: int, stride: int) -> ShmBuffer:
        if format not in _RAW_MODES:
            raise CaptureError(f"the compositor offers an unknown pixel format 0x{format:08x}")
        current = self._buffers.get(name)
        if current is not None and current.matches(width, height, stride, format):
            return current
        if current is not None:
            current.destroy()
        shm = self._connection.bound["wl_shm"]
        self._buffers[name] = buffer = ShmBuffer.create(shm, width, height, stride, format)
        return buffer

    def _wait(self, done: Callable[[], bool], output: Output, what: str) -> None:
        """Dispatch the connection's events until done(), within the frame timeout."""
        display = self._connection.display
        deadline = time.monotonic() + self._timeout_s
        while not done():
            display.flush()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CaptureError(
                    f"output {output.name}: the compositor sent no {what} within "
                    f"{self._timeout_s:g} s"
                )
            readable, _, _ = select.select([display.get_fd()], [], [], remaining)
            if readable:
                display.dispatch(block=True)

    def close(self) -> None:
        with self._connection.lock:
            for buffer in self._buffers.values():
                buffer.destroy()
            self._buffers.clear()
        if self._on_close is not None:
            self._on_close()


def _listen(proxy: Any, frame: _Frame) -> None:
    def buffer(_p: Any, format: int, width: int, height: int, stride: int) -> None:
        frame.shm = (format, width, height, stride)

    def flags(_p: Any, value: int) -> None:
        frame.flags = value

    def buffer_done(_p: Any) -> None:
        frame.buffer_done = True

    def ready(_p: Any, *_time: int) -> None:
        frame.ready = True

    def failed(_p: Any) -> None:
        frame.failed = True

    proxy.dispatcher["buffer"] = buffer
    proxy.dispatcher["flags"] = flags
    proxy.dispatcher["buffer_done"] = buffer_done
    proxy.dispatcher["ready"] = ready
    proxy.dispatcher["failed"] = failed


def _image(buffer: ShmBuffer, flags: int) -> Image.Image:
    raw = _RAW_MODES[buffer.format]
    image = Image.frombuffer(
        "RGB", (buffer.width, buffer.height), bytes(buffer.memory), "raw", raw, buffer.stride, 1
    )
    if flags & _Y_INVERT:
        image = image.transpose(Image.Transpose.FLIP_TOP_BOTTOM)
    return image


def _intersection(a: Region, b: Region) -> Region | None:
    left, top = max(a.x, b.x), max(a.y, b.y)
    right, bottom = min(a.right, b.right), min(a.bottom, b.bottom)
    if right <= left or bottom <= top:
        return None
    return Region(left, top, right - left, bottom - top)
