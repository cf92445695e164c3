"""Capture through the Screenshot portal (non-interactive), cropped per display.

Each grab asks org.freedesktop.portal.Screenshot for the whole desktop, reads
the PNG it names by file URI, and deletes that file (GNOME saves portal
screenshots into ~/Pictures; left alone they would fill it). This costs a
PNG encode and decode per frame, so it is far slower than an X11 or PipeWire
capture: the portal route reads the ScreenCast stream instead
(`holodesk.platform.wayland.portal_route`, `pipewire`), and this stays for
where GStreamer's pipewiresrc is missing. Bare mutter has no Screenshot of its
own (xdg-desktop-portal-gnome forwards it to gnome-shell).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlparse

from PIL import Image

from holodesk.platform.base import DisplayInfo, Region, ScreenSource
from holodesk.platform.errors import CaptureError, PlatformError
from holodesk.platform.wayland.dbus import PortalBus, RequestEndedError, unwrap
from holodesk.platform.wayland.layout import DesktopLayout
from holodesk.platform.wayland.portal import SCREENSHOT_INTERFACE, consent_fix

log = logging.getLogger(__name__)

DEFAULT_SCREENSHOT_TIMEOUT_S = 60.0


class DesktopShots(Protocol):
    """Whole-desktop screenshots in physical pixels: the Screenshot portal's or KWin's."""

    def take(self) -> Image.Image: ...


def path_from_uri(uri: str) -> Path:
    """The local path of a file:// URI (percent-escapes decoded)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        raise CaptureError(f"the Screenshot portal returned {uri!r}, not a local file URI")
    return Path(unquote(parsed.path))


class PortalScreenshots:
    """Whole-desktop screenshots from the Screenshot portal."""

    def __init__(
        self,
        bus: PortalBus,
        *,
        timeout_s: float = DEFAULT_SCREENSHOT_TIMEOUT_S,
        keep_files: bool = False,
    ) -> None:
        self._bus = bus
        self._timeout_s = timeout_s
        self._keep_files = keep_files

    def take(self) -> Image.Image:
        """An RGB screenshot of every monitor."""
        try:
            results = self._bus.request(
                SCREENSHOT_INTERFACE,
                "Screenshot",
                "sa{sv}",
                ("",),
                {"interactive": ("b", False), "modal": ("b", False)},
                timeout_s=self._timeout_s,
            )
        except RequestEndedError as error:
            if error.denied:
                raise CaptureError(
                    "the desktop refused the screenshot (Screenshot.Screenshot answered 1): "
                    + consent_fix("screenshots")
                ) from error
            raise CaptureError(f"the Screenshot portal failed: {error}") from error
        except PlatformError as error:
            raise CaptureError(f"the Screenshot portal failed: {error}") from error
        if "uri" not in results:
            raise CaptureError("the Screenshot portal answered without a uri")
        path = path_from_uri(str(unwrap(results["uri"])))
        try:
            data = path.read_bytes()
        except OSError as error:
            raise CaptureError(f"cannot read the portal's screenshot {path}: {error}") from error
        finally:
            if not self._keep_files:
                path.unlink(missing_ok=True)
        try:
            with Image.open(io.BytesIO(data)) as image:
                return image.convert("RGB")
        except OSError as error:
            raise CaptureError(
                f"the portal's screenshot {path} is not an image: {error}"
            ) from error


class WaylandScreen(ScreenSource):
    """Displays from the portal's monitor layout; pixels from whole-desktop screenshots."""

    def __init__(
        self,
        shots: DesktopShots,
        layout: Callable[[], DesktopLayout],
        on_close: Callable[[], None] = lambda: None,
    ) -> None:
        self._shots = shots
        self._layout = layout
        self._on_close = on_close

    def displays(self) -> list[DisplayInfo]:
        return self._layout().displays()

    def grab(self, region: Region) -> Image.Image:
        desktop = self._layout().desktop()
        if not desktop.contains_region(region):
            raise ValueError(f"region {region} is outside the desktop {desktop}")
        image = self._shots.take()
        if image.size != (desktop.width, desktop.height):
            raise CaptureError(
                f"the screenshot is {image.width}x{image.height} but the desktop was "
                f"{desktop.width}x{desktop.height}: the monitor layout changed; reopen the backend"
            )
        left, top = region.x - desktop.x, region.y - desktop.y
        if (left, top, region.width, region.height) == (0, 0, *image.size):
            return image
        return image.crop((left, top, left + region.width, top + region.height))

    def close(self) -> None:
        self._on_close()
