"""Displays and capture on Windows, in the physical pixels per-monitor awareness shows."""

from __future__ import annotations

import threading

from PIL import Image

from holodesk.platform.base import DisplayInfo, Grab, Region, ScreenSource, check_grab
from holodesk.platform.errors import CaptureError
from holodesk.platform.windows.api import WinApi
from holodesk.platform.windows.dpi import scale_factor


def displays_from_monitors(api: WinApi) -> list[DisplayInfo]:
    """Every monitor as a display, primary first; ids are device names (\\\\.\\DISPLAY1)."""
    monitors = api.monitors()
    if not monitors:
        raise CaptureError("Windows reports no monitor (EnumDisplayMonitors found none)")
    system_dpi = api.system_dpi()
    displays = [
        DisplayInfo(
            display_id=monitor.device,
            bounds=monitor.bounds,
            scale_factor=scale_factor(monitor, system_dpi),
            primary=monitor.primary,
            name=monitor.name or monitor.device,
        )
        for monitor in monitors
    ]
    return sorted(displays, key=lambda display: not display.primary)


class WinScreen(ScreenSource):
    """Monitors from EnumDisplayMonitors, pixels through the API's capture (mss)."""

    def __init__(self, api: WinApi) -> None:
        self._api = api
        self._lock = threading.Lock()

    def displays(self) -> list[DisplayInfo]:
        with self._lock:
            return displays_from_monitors(self._api)

    def grab(self, region: Region) -> Image.Image:
        check_grab(region, self.virtual_desktop())
        with self._lock:
            image = self._api.capture(region)
        return self._checked(image, region).convert("RGB")

    def grab_since(self, region: Region, previous: Grab | None = None) -> Grab:
        check_grab(region, self.virtual_desktop())
        with self._lock:
            grab = self._api.capture_since(region, previous)
        self._checked(grab.image, region)
        return grab

    @staticmethod
    def _checked(image: Image.Image, region: Region) -> Image.Image:
        if image.size != (region.width, region.height):
            raise CaptureError(
                f"capturing {region} returned {image.size[0]}x{image.size[1]} pixels: the "
                "process is not per-monitor DPI aware, so Windows scaled the capture"
            )
        return image

    def close(self) -> None:
        with self._lock:
            self._api.close()
