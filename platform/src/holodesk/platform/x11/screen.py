"""Display geometry (RandR 1.5 monitors, else Xinerama) and capture (mss)."""

from __future__ import annotations

import threading
from typing import Any

from PIL import Image
from Xlib import Xatom

from holodesk.platform.base import DisplayInfo, Grab, Region, ScreenSource
from holodesk.platform.mss_grabber import MssGrabber

# X11 has one scale for the whole screen: the Xft.dpi resource desktops set for HiDPI.
BASE_DPI = 96.0


class X11Screen(ScreenSource):
    """The screens of one X display; captures go through mss on its own connection."""

    def __init__(self, display: Any, display_name: str) -> None:
        self._display = display
        self._display_name = display_name
        self._root = display.screen().root
        self._lock = threading.Lock()
        self._grabber = MssGrabber(display=display_name)

    def displays(self) -> list[DisplayInfo]:
        with self._lock:
            scale = self._scale_factor()
            monitors = self._randr_monitors() or self._xinerama_screens() or self._whole_screen()
        if not any(primary for _, _, primary in monitors):
            # X need not name a primary; the first monitor is where panels usually go.
            name, bounds, _ = monitors[0]
            monitors[0] = (name, bounds, True)
        displays = [
            DisplayInfo(name, bounds, scale_factor=scale, primary=primary, name=name)
            for name, bounds, primary in monitors
        ]
        return sorted(displays, key=lambda display: not display.primary)

    def grab(self, region: Region) -> Image.Image:
        self._check(region)
        return self._grabber.grab(region.x, region.y, region.width, region.height, region)

    def grab_since(self, region: Region, previous: Grab | None = None) -> Grab:
        self._check(region)
        return self._grabber.grab_since(region, region, previous)

    def _check(self, region: Region) -> None:
        screen = self._screen_region()
        if region.width == 0 or region.height == 0 or not screen.contains_region(region):
            raise ValueError(f"cannot grab {region}: it must be non-empty and inside {screen}")

    def close(self) -> None:
        self._grabber.close()
        with self._lock:
            self._display.close()

    def _screen_region(self) -> Region:
        with self._lock:
            geometry = self._root.get_geometry()
        return Region(0, 0, int(geometry.width), int(geometry.height))

    def _scale_factor(self) -> float:
        resources = self._root.get_full_property(Xatom.RESOURCE_MANAGER, Xatom.STRING)
        if resources is None:
            return 1.0
        value = resources.value
        text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        for line in text.splitlines():
            name, _, setting = line.partition(":")
            if name.strip() == "Xft.dpi":
                try:
                    dpi = float(setting.strip())
                except ValueError:
                    return 1.0
                return dpi / BASE_DPI if dpi > 0 else 1.0
        return 1.0

    def _randr_monitors(self) -> list[tuple[str, Region, bool]]:
        if not self._display.has_extension("RANDR") or not hasattr(
            self._root, "xrandr_get_monitors"
        ):
            return []  # python-xlib adds get_monitors only for RandR 1.5 servers
        reply = self._root.xrandr_get_monitors(is_active=True)
        return [
            (
                self._display.get_atom_name(monitor.name),
                Region(monitor.x, monitor.y, monitor.width_in_pixels, monitor.height_in_pixels),
                bool(monitor.primary),
            )
            for monitor in reply.monitors
        ]

    def _xinerama_screens(self) -> list[tuple[str, Region, bool]]:
        if not self._display.has_extension("XINERAMA"):
            return []
        if not self._display.xinerama_is_active():
            return []
        screens = self._display.xinerama_query_screens().screens
        return [
            (f"xinerama-{number}", Region(s.x, s.y, s.width, s.height), False)
            for number, s in enumerate(screens)
        ]

    def _whole_screen(self) -> list[tuple[str, Region, bool]]:
        geometry = self._root.get_geometry()
        return [("screen", Region(0, 0, int(geometry.width), int(geometry.height)), True)]
