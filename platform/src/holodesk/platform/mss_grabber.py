"""One lazily opened mss screenshot object, shared by the backends that capture with mss."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

import mss
import numpy as np
from mss.exception import ScreenShotError
from PIL import Image

from holodesk.platform.base import Grab, Region, RowBands
from holodesk.platform.errors import CaptureError

log = logging.getLogger(__name__)

# Separate changes (a caret at the top, a tooltip at the bottom) are compared and
# converted band by band, not as one span from the first to the last; past this many
# bands the nearest are joined.
MAX_BANDS = 8


class MssGrabber:
    """Opened on first use (after the backend's own set-up, e.g. DPI awareness), and
    locked, because an mss object must not be used from two threads at once.

    `fallback`: mss options to try once, for good, when the first capture with
    `mss_options` fails (on X11, mss's XCB capture refuses some servers' visuals,
    TigerVNC's Xvnc among them: "drawable's visual not found"; its Xlib one reads
    them).

    mss's Xlib backend is bound to the thread that made it (its X handles are
    thread-local: used or closed from another thread it raises AttributeError), so
    with it the grabber is made again on a thread that was not its maker, and one
    left behind by its thread is dropped unclosed: its connection ends with the
    process, as mss's own docs accept."""

    def __init__(self, fallback: Mapping[str, Any] | None = None, **mss_options: Any) -> None:
        self._options = mss_options
        self._fallback = dict(fallback) if fallback else None
        self._grabber: Any = None
        self._maker = 0  # the thread that made the grabber
        self._lock = threading.Lock()
        # Why the fallback options are in use ("" while the first ones serve).
        self.fallback_reason = ""

    def grab(
        self, left: float, top: float, width: float, height: float, what: object
    ) -> Image.Image:
        """An RGB image of the rectangle; `what` names it in the error."""
        shot = self._shot(left, top, width, height, what)
        return _rgb(shot.raw, shot.size)

    def grab_since(self, region: Region, what: object, previous: Grab | None) -> Grab:
        """A Grab of the region whose changed rows come from comparing the raw pixels
        with `previous`'s (kept as its token). Only those rows are converted; the rest
        is copied from the previous image (at 4K: ~7 ms to compare, ~6 to copy, where
        converting everything and diffing the images took ~35)."""
        shot = self._shot(region.x, region.y, region.width, region.height, what)
        raw: bytearray = shot.raw
        width, height = shot.size
        before = previous.token if previous is not None else None
        if (
            previous is None
            or previous.region != region
            or not isinstance(before, bytearray)
            or len(before) != len(raw)
            or len(raw) != width * height * 4
        ):
            return Grab(region, _rgb(raw, shot.size), None, raw)
        differs = (
            np.frombuffer(raw, np.uint32).reshape(height, width)
            != np.frombuffer(before, np.uint32).reshape(height, width)
        ).any(axis=1)
        bands = row_bands(differs)
        if not bands:
            return Grab(region, previous.image, (), raw)
        stride = width * 4
        image = previous.image.copy()
        for top, bottom in bands:
            band = _rgb(raw[top * stride : bottom * stride], (width, bottom - top))
            image.paste(band, (0, top))
        return Grab(region, image, bands, raw)

    def _shot(self, left: float, top: float, width: float, height: float, what: object) -> Any:
        area = {"left": left, "top": top, "width": width, "height": height}
        with self._lock:
            try:
                return self._open().grab(area)
            except ScreenShotError as error:
                if self._fallback is None:
                    raise CaptureError(f"capturing {what} failed: {error}") from error
                first = error
            fallback, self._fallback = self._fallback, None
            self._close_grabber()
            self._options = {**self._options, **fallback}
            try:
                shot = self._open().grab(area)
            except ScreenShotError as error:
                raise CaptureError(
                    f"capturing {what} failed: {first}; and with mss options {fallback}: {error}"
                ) from error
            log.info("capturing with mss options %s: the default failed (%s)", fallback, first)
            self.fallback_reason = f"mss options {fallback}, as the default failed: {first}"
            return shot

    def _open(self) -> Any:
        if self._grabber is not None and not self._usable_here():
            self._close_grabber()
        if self._grabber is None:
            self._grabber = mss.MSS(**self._options)
            self._maker = threading.get_ident()
        return self._grabber

    def _usable_here(self) -> bool:
        thread_bound = self._options.get("backend") == "xlib"
        return not thread_bound or self._maker == threading.get_ident()

    def _close_grabber(self) -> None:
        if self._grabber is None:
            return
        if self._usable_here():
            self._grabber.close()
        else:
            log.debug("mss's Xlib grabber dropped unclosed: made on another thread")
        self._grabber = None

    def close(self) -> None:
        with self._lock:
            self._close_grabber()


def row_bands(changed: np.ndarray, max_bands: int = MAX_BANDS) -> RowBands:
    """The runs of True in a per-row flag array, as [top, bottom) bands; past
    `max_bands`, the smallest gaps between runs are bridged."""
    rows = np.flatnonzero(changed)
    if rows.size == 0:
        return ()
    breaks = np.flatnonzero(np.diff(rows) > 1)
    starts = np.concatenate(([rows[0]], rows[breaks + 1]))
    ends = np.concatenate((rows[breaks] + 1, [rows[-1] + 1]))
    if starts.size > max_bands:
        gaps = starts[1:] - ends[:-1]
        kept = np.sort(np.argsort(gaps, kind="stable")[gaps.size - (max_bands - 1) :])
        starts = np.concatenate((starts[:1], starts[1:][kept]))
        ends = np.concatenate((ends[:-1][kept], ends[-1:]))
    return tuple(zip(starts.tolist(), ends.tolist(), strict=True))


def _rgb(raw: bytes | bytearray, size: tuple[int, int]) -> Image.Image:
    # shot.raw, not shot.bgra: bgra is a bytes() copy of raw (33 MB at 4K, ~10 ms).
    return Image.frombytes("RGB", size, raw, "raw", "BGRX")
