"""Lossless PNG for screens: indexed (a palette) whenever that is exact.

Shared by the client (frames and patches it sends) and the daemon (frames it
rebuilds from deltas), so both store screens the same way.

Desktops are flat UI colours and anti-aliased text, so a frame, even downsized,
often holds no more than 256 distinct colours (198 to 254 on every screen of the
client pipeline benchmark, 1280x800 to 4K, dense text or sparse). An indexed PNG of
such a frame is one byte per pixel instead of three: 2-4x smaller, and quicker to
compress (PNG level 6: 13 ms against 55 ms for a sparse 1080p screen, 45 against
175 ms for a dense 4K one downsized to 1820x1024). It is exact by construction
(every colour is listed first), and anything with more colours goes out as RGB.
Every decoder gives back the same RGB pixels either way (the daemon converts each
image to RGB).
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

MAX_PALETTE = 256
# From this many pixels a lookup table beats a binary search per pixel.
_TABLE_FROM_PIXELS = 10_000


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
    palette = np.array([rgb for _, rgb in colours], dtype=np.uint8)
    values = _rgb24(palette)
    order = np.argsort(values)
    palette, values = palette[order], values[order]
    # Exact by construction: getcolors listed every colour present.
    indices = _indices_of(_rgb24(np.asarray(image)), values)
    indexed = Image.frombytes("P", image.size, indices.tobytes())
    indexed.putpalette(palette.tobytes())
    return indexed


def _indices_of(pixels: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The index in the sorted `values` of each pixel's 24-bit value (all present)."""
    if pixels.size < _TABLE_FROM_PIXELS:
        found: np.ndarray = np.searchsorted(values, pixels)
        return found.astype(np.uint8)
    # A table indexed by colour: ~5 ns a pixel after 0.7 ms to allocate it, where a
    # binary search costs ~70 ns (and Pillow's quantizers ~30): 15 ms at 1080p.
    index_of = np.zeros(1 << 24, dtype=np.uint8)
    index_of[values] = np.arange(len(values), dtype=np.uint8)
    indices: np.ndarray = index_of[pixels]
    return indices


def _rgb24(pixels: np.ndarray) -> np.ndarray:
    """The 24-bit value of each RGB pixel of an (..., 3) uint8 array."""
    value = pixels[..., 0].astype(np.uint32)
    value <<= 8
    value |= pixels[..., 1]
    value <<= 8
    value |= pixels[..., 2]
    return value
