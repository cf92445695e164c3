"""The page as a screen: one display, captured as a screenshot at device scale."""

from __future__ import annotations

import io

from PIL import Image, UnidentifiedImageError

from holodesk.platform.base import DisplayInfo, Region, ScreenSource, check_grab
from holodesk.platform.errors import CaptureError
from holodesk.platform.web.page import WebPage


class WebScreen(ScreenSource):
    """One display: the viewport, in physical pixels (CSS px x device scale factor)."""

    def __init__(self, page: WebPage) -> None:
        self._page = page

    def displays(self) -> list[DisplayInfo]:
        return [self._page.display]

    def grab(self, region: Region) -> Image.Image:
        bounds = self._page.display.bounds
        check_grab(region, bounds)
        data = self._page.screenshot()
        try:
            image = Image.open(io.BytesIO(data))
            image.load()
        except (UnidentifiedImageError, OSError) as error:
            raise CaptureError(
                f"the screenshot of {self._page.display_id} is no image: {error}"
            ) from error
        if image.size != (bounds.width, bounds.height):
            raise CaptureError(
                f"the screenshot of {self._page.display_id} is {image.size[0]}x{image.size[1]}, "
                f"not the viewport's {bounds.width}x{bounds.height} physical pixels"
            )
        image = image.convert("RGB")
        if region != bounds:
            image = image.crop((region.x, region.y, region.right, region.bottom))
        return image
