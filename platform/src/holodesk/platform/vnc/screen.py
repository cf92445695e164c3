"""Capture from a VNC server: its framebuffer is one display, one pixel per pixel."""

from __future__ import annotations

from PIL import Image

from holodesk.platform.base import DisplayInfo, Region, ScreenSource, check_grab
from holodesk.platform.errors import CaptureError
from holodesk.platform.vnc.client import RfbClient
from holodesk.platform.vnc.connection import VncLink

DEFAULT_UPDATE_TIMEOUT_S = 30.0


class VncScreen(ScreenSource):
    """The remote framebuffer as display `display_id` at (0, 0), scale 1.0.

    A server announces a resize only inside an update, so `displays()` asks
    for one (a 1-pixel round trip) to report the size as it is now; `grab`
    fetches fresh pixels of its region.
    """

    def __init__(
        self,
        link: VncLink,
        display_id: str,
        update_timeout_s: float = DEFAULT_UPDATE_TIMEOUT_S,
    ) -> None:
        if update_timeout_s <= 0:
            raise ValueError(f"update_timeout_s must be positive, not {update_timeout_s}")
        self._link = link
        self._display_id = display_id
        self._update_timeout_s = update_timeout_s

    def displays(self) -> list[DisplayInfo]:
        width, height = self._link.run(
            lambda client: client.sync(self._update_timeout_s),
            CaptureError,
            "reading the remote desktop's size",
        )
        return [
            DisplayInfo(
                self._display_id,
                Region(0, 0, width, height),
                scale_factor=1.0,
                primary=True,
                name=self._link.info.name,
            )
        ]

    def grab(self, region: Region) -> Image.Image:
        check_grab(region, self.virtual_desktop())

        def snapshot(client: RfbClient) -> Image.Image:
            try:
                return client.snapshot(
                    region.x, region.y, region.width, region.height, self._update_timeout_s
                )
            except ValueError as error:
                # It fitted a moment ago: the server resized meanwhile.
                raise CaptureError(
                    f"the remote desktop was resized during the capture of {region}: {error}; "
                    "read displays() again and capture again"
                ) from error

        return self._link.run(snapshot, CaptureError, f"capturing {region} over VNC")

    def close(self) -> None:
        self._link.close()
