"""The image encodings a frame may travel in (the contract's ImageEncoding)."""

from __future__ import annotations

import enum


class ImageEncoding(enum.Enum):
    PNG = "png"
    JPEG = "jpeg"
    WEBP = "webp"

    @property
    def mime_type(self) -> str:
        return f"image/{self.value}"

    @property
    def pillow_format(self) -> str:
        """The name Pillow's Image.save takes for it."""
        return self.name
