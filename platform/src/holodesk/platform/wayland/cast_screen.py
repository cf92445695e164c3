"""The screen of a portal session, read from its PipeWire streams (one per monitor).

Each monitor stream's frames are that monitor in physical pixels, so the scale
between the portal's logical layout and the pixels is the first frame's width
over the stream's logical width: no Screenshot call is needed to measure it
(bare mutter has no Screenshot implementation at all: xdg-desktop-portal-gnome
forwards it to gnome-shell). One scale for the desktop, as `layout` assumes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from PIL import Image

from holodesk.platform.base import DisplayInfo, Region, ScreenSource
from holodesk.platform.errors import CaptureError
from holodesk.platform.wayland.layout import DesktopLayout, Monitor
from holodesk.platform.wayland.pipewire import DEFAULT_FIRST_FRAME_TIMEOUT_S, PipeWireStream

log = logging.getLogger(__name__)


class CastScreen(ScreenSource):
    """Displays and pixels of a started session's monitor streams.

    `open_remote` gives a fresh PipeWire descriptor (one per stream reader).
    """

    def __init__(
        self,
        monitors: Sequence[Monitor],
        open_remote: Callable[[], int],
        *,
        gst_launch: str = "gst-launch-1.0",
        first_frame_timeout_s: float = DEFAULT_FIRST_FRAME_TIMEOUT_S,
        on_close: Callable[[], None] = lambda: None,
    ) -> None:
        if not monitors:
            raise CaptureError("the session has no monitor stream to read")
        self._on_close = on_close
        self._streams: dict[int, PipeWireStream] = {}
        try:
            for monitor in monitors:
                self._streams[monitor.node_id] = PipeWireStream(
                    open_remote(),
                    monitor.node_id,
                    gst_launch=gst_launch,
                    first_frame_timeout_s=first_frame_timeout_s,
                )
        except BaseException:
            self._close_streams()
            raise
        first = monitors[0]
        scale = self._streams[first.node_id].size[0] / first.width
        self.layout = DesktopLayout(tuple(monitors), scale)
        for monitor in monitors:
            expected = self.layout.physical(monitor)
            size = self._streams[monitor.node_id].size
            if abs(size[0] - expected.width) > 1 or abs(size[1] - expected.height) > 1:
                log.warning(
                    "stream %s is %sx%s, not %sx%s at scale %.3f: monitors of mixed scales",
                    monitor.node_id,
                    *size,
                    expected.width,
                    expected.height,
                    scale,
                )

    def displays(self) -> list[DisplayInfo]:
        return self.layout.displays()

    def sends_frames(self, timeout_s: float) -> bool:
        """Whether every monitor's stream has sent a frame, waiting up to `timeout_s` in all."""
        deadline = time.monotonic() + timeout_s
        return all(
            stream.sends_frames(max(0.0, deadline - time.monotonic()))
            for stream in self._streams.values()
        )

    def frames(self) -> int:
        """Frames received so far over every stream (for tests and benchmarks)."""
        return sum(stream.frames for stream in self._streams.values())

    def grab(self, region: Region) -> Image.Image:
        desktop = self.layout.desktop()
        if not desktop.contains_region(region):
            raise ValueError(f"region {region} is outside the desktop {desktop}")
        pieces = []
        for monitor in self.layout.monitors:
            bounds = self.layout.physical(monitor)
            if _overlap(bounds, region) is not None:
                pieces.append((bounds, self._streams[monitor.node_id].latest()))
        if len(pieces) == 1:
            bounds, frame = pieces[0]
            if bounds.contains_region(region):
                left, top = region.x - bounds.x, region.y - bounds.y
                if (left, top, region.width, region.height) == (0, 0, *frame.size):
                    return frame.copy()
                return frame.crop((left, top, left + region.width, top + region.height))
        # Spanning monitors (or a gap between them, left black).
        image = Image.new("RGB", (region.width, region.height))
        for bounds, frame in pieces:
            image.paste(frame, (bounds.x - region.x, bounds.y - region.y))
        return image

    def _close_streams(self) -> None:
        for stream in self._streams.values():
            stream.close()
        self._streams.clear()

    def close(self) -> None:
        try:
            self._close_streams()
        finally:
            self._on_close()


def _overlap(a: Region, b: Region) -> Region | None:
    left, top = max(a.x, b.x), max(a.y, b.y)
    right, bottom = min(a.right, b.right), min(a.bottom, b.bottom)
    if right <= left or bottom <= top:
        return None
    return Region(left, top, right - left, bottom - top)
