"""Lossless PNG for screens: indexed (a palette) whenever that is exact.

Desktops are flat UI colours and anti-aliased text, so a frame, even downsized,
often holds no more than 256 distinct colours (198 to 254 on every screen of the
client pipeline benchmark, 1280x800 to 4K, dense text or sparse). An indexed PNG of
such a frame is one byte per pixel instead of three: 2-4x smaller, and quicker to
compress. It is only used when it is exact: the palette image is compared with the
original pixel for pixel, and anything else goes out as RGB. Every decoder gives
back the same RGB pixels either way (the daemon converts each image to RGB).
"""

from __future__ import annotations

import io

from PIL import Image, ImageChops

MAX_PALETTE = 256


def encode_png(image: Image.Image, compress_level: int = 6) -> bytes:
    """`image` as PNG: indexed when that is exact, else as it is."""
    indexed = exact_palette(image)
    buffer = io.BytesIO()
    (image if indexed is None else indexed).save(buffer, "PNG", compress_level=compress_level)
    return buffer.getvalue()


def exact_palette(image: Image.Image) -> Image.Image | None:
    """`image` as a palette image with exactly its pixels, or None when it has more
    than 256 colours (or is not RGB)."""
    if image.mode != "RGB":
        return None
    colours = image.getcolors(MAX_PALETTE)  # None past 256: a cheap, early way out
    if colours is None:
        return None
    # With no more colours than palette entries, median cut leaves each colour in a
    # box of its own; the check below makes that a guarantee rather than a belief.
    indexed = image.quantize(
        colors=len(colours), method=Image.Quantize.MAXCOVERAGE, dither=Image.Dither.NONE
    )
    if ImageChops.difference(indexed.convert("RGB"), image).getbbox() is not None:
        return None
    return indexed
