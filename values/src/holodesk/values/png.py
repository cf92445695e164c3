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
from typing import cast

import numpy as np
from PIL import Image

MAX_PALETTE = 256
# Multiplicative hashes of a colour into 2^18 slots: for 256 colours each one is
# collision-free with probability ~0.88 (a birthday bound), so eight all failing
# is ~4e-8, and even then the exact slot-per-colour table takes over.
_HASH_MULTIPLIERS = (
    0x9E3779B1,
    0x85EBCA77,
    0xC2B2AE3D,
    0x27D4EB2F,
    0x165667B1,
    0xFD7046C5,
    0xB55A4F09,
    0x2545F491,
)
_HASH_SHIFT = np.uint32(32 - 18)


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


def paint_indexed(canvas: Image.Image, patch: Image.Image, at: tuple[int, int]) -> bool:
    """Paint the RGB `patch` onto the palette image `canvas` at `at`, exactly: each
    colour is found in the canvas's palette or added to it. False, with the canvas
    untouched, when the palette would pass 256 colours or the canvas is not a plain
    palette image (transparency, or pixels the palette does not cover): paint in RGB.

    What lets the daemon rebuild a delta frame without re-indexing the whole frame:
    the indexed PNG it stores decodes to indices, the patch's few colours are mapped,
    and the result is encoded as it is.
    """
    if canvas.mode != "P" or patch.mode != "RGB" or "transparency" in canvas.info:
        return False
    counted = patch.getcolors(MAX_PALETTE)
    if counted is None:
        return False
    colours = [cast(tuple[int, int, int], rgb) for _, rgb in counted]
    flat = canvas.getpalette("RGB") or []
    entries = len(flat) // 3
    if int(np.asarray(canvas).max()) >= entries:
        return False
    slot_of: dict[tuple[int, int, int], int] = {}
    for slot in reversed(range(entries)):  # the first of duplicate entries wins
        red, green, blue = flat[3 * slot : 3 * slot + 3]
        slot_of[(red, green, blue)] = slot
    missing = [rgb for rgb in colours if rgb not in slot_of]
    if entries + len(missing) > MAX_PALETTE:
        return False
    for rgb in missing:
        slot_of[rgb] = len(flat) // 3
        flat.extend(rgb)
    if missing:
        canvas.putpalette(flat)
    values = _rgb24(np.array(colours, dtype=np.uint8))
    order = np.argsort(values)
    slots = np.array([slot_of[rgb] for rgb in colours], dtype=np.uint8)[order]
    positions = _indices_of(_rgb24(np.asarray(patch)), values[order])
    canvas.paste(Image.frombytes("P", patch.size, slots[positions].tobytes()), at)
    return True


def _indices_of(
    pixels: np.ndarray, values: np.ndarray, multipliers: tuple[int, ...] = _HASH_MULTIPLIERS
) -> np.ndarray:
    """The index in the sorted `values` of each pixel's 24-bit value (all present;
    `pixels` is scratch, overwritten).

    Through a perfect hash of the palette: a 256 KiB table that stays in cache, and
    three passes over the pixels (~1 ms a megapixel). A table with a slot for every
    colour (16 MiB) cost 1-2 ms to allocate and fault in each time, which was most
    of the cost of a patch; a binary search per pixel costs ~70 ns.
    """
    for multiplier in multipliers:
        slots = (values * np.uint32(multiplier)) >> _HASH_SHIFT
        if np.unique(slots).size == values.size:  # no two colours share a slot
            table = np.zeros(1 << (32 - int(_HASH_SHIFT)), dtype=np.uint8)
            table[slots] = np.arange(values.size, dtype=np.uint8)
            pixels *= np.uint32(multiplier)  # wraps modulo 2^32, as the slots did
            pixels >>= _HASH_SHIFT
            hashed: np.ndarray = table[pixels]
            return hashed
    index_of = np.zeros(1 << 24, dtype=np.uint8)
    index_of[values] = np.arange(values.size, dtype=np.uint8)
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
