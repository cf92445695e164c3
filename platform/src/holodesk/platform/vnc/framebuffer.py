"""The client's copy of the remote framebuffer: a numpy RGB array updated rectangle by rectangle."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from PIL import Image

from holodesk.platform.vnc.protocol import ProtocolError

Pixels = npt.NDArray[np.uint8]


class Framebuffer:
    """Pixels in RGB order, shape (height, width, 3); not thread-safe (the client locks)."""

    def __init__(self, width: int, height: int) -> None:
        self.pixels: Pixels = np.zeros((height, width, 3), dtype=np.uint8)

    @property
    def width(self) -> int:
        return int(self.pixels.shape[1])

    @property
    def height(self) -> int:
        return int(self.pixels.shape[0])

    def resize(self, width: int, height: int) -> None:
        """A new, black framebuffer: after a resize the server repaints everything."""
        self.pixels = np.zeros((height, width, 3), dtype=np.uint8)

    def contains(self, x: int, y: int, width: int, height: int) -> bool:
        return x >= 0 and y >= 0 and x + width <= self.width and y + height <= self.height

    def put_bgr(self, x: int, y: int, bgr: Pixels) -> None:
        """Write a (h, w, 3+) array of B, G, R(, X) pixels at (x, y)."""
        height, width = bgr.shape[:2]
        self._check(x, y, width, height)
        self.pixels[y : y + height, x : x + width] = bgr[..., 2::-1]

    def copy_rect(self, src_x: int, src_y: int, x: int, y: int, width: int, height: int) -> None:
        """CopyRect: the source may overlap the destination, hence the copy."""
        self._check(src_x, src_y, width, height)
        self._check(x, y, width, height)
        source = self.pixels[src_y : src_y + height, src_x : src_x + width].copy()
        self.pixels[y : y + height, x : x + width] = source

    def crop(self, x: int, y: int, width: int, height: int) -> Image.Image:
        self._check(x, y, width, height)
        region = np.ascontiguousarray(self.pixels[y : y + height, x : x + width])
        return Image.fromarray(region)

    def _check(self, x: int, y: int, width: int, height: int) -> None:
        if not self.contains(x, y, width, height):
            raise ProtocolError(
                f"rectangle {width}x{height}+{x}+{y} lies outside the "
                f"{self.width}x{self.height} framebuffer"
            )
