"""One lazily opened mss screenshot object, shared by the backends that capture with mss."""

from __future__ import annotations

import threading
from typing import Any

import mss
from mss.exception import ScreenShotError
from PIL import Image

from holodesk.platform.errors import CaptureError


class MssGrabber:
    """Opened on first use (after the backend's own set-up, e.g. DPI awareness), and
    locked, because an mss object must not be used from two threads at once."""

    def __init__(self, **mss_options: Any) -> None:
        self._options = mss_options
        self._grabber: Any = None
        self._lock = threading.Lock()

    def grab(
        self, left: float, top: float, width: float, height: float, what: object
    ) -> Image.Image:
        """An RGB image of the rectangle; `what` names it in the error."""
        area = {"left": left, "top": top, "width": width, "height": height}
        with self._lock:
            try:
                if self._grabber is None:
                    self._grabber = mss.MSS(**self._options)
                shot = self._grabber.grab(area)
            except ScreenShotError as error:
                raise CaptureError(f"capturing {what} failed: {error}") from error
        # shot.raw, not shot.bgra: bgra is a bytes() copy of raw (33 MB at 4K, ~10 ms).
        return Image.frombytes("RGB", shot.size, shot.raw, "raw", "BGRX")

    def close(self) -> None:
        with self._lock:
            if self._grabber is not None:
                self._grabber.close()
                self._grabber = None
