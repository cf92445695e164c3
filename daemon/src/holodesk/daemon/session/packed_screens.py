"""A decoded screen, packed small: its raw pixels in bands of rows, each zstd-compressed.

A 1080p screen is 6 MiB of RGB pixels, so a thousand sessions' screens do not fit
in memory decoded, and a screen that fell out of memory cost a PNG decode (~25 ms)
at the session's next changed step. Packed, the same screen of text-dense,
anti-aliased colour content is ~200 KiB (smaller than its PNG) and unpacks in
~3 ms: zstd at level 1 on raw pixels is that fast because screens are long runs
of repeated pixels.

Bands, because a step changes a few rows of a screen (a line being typed, a menu):
`repack` compresses only the bands a step's patches touched and shares the others'
bytes with the screen it was painted on, so keeping each step's screen packed
costs a fraction of a millisecond rather than a whole-screen compression (~4 ms).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import zstandard
from PIL import Image

from holodesk.daemon.frame_pixels import DecodedPatch

# Rows per band: a typed line touches one or two; 17 bands to a 1080p screen.
BAND_ROWS = 64
# zstd's fastest standard level: a larger one packs ~20% smaller at twice the time.
ZSTD_LEVEL = 1
# Screens are what the daemon decodes: indexed or RGB (frame_pixels.decode_bytes).
PACKABLE_MODES = {"P": 1, "RGB": 3}

# zstandard's (de)compressor objects are not safe to share between threads.
_codecs = threading.local()


@dataclass(frozen=True, slots=True)
class PackedScreen:
    """The pixels of one screen, `BAND_ROWS` rows to a compressed band, top down."""

    mode: str
    width: int
    height: int
    bands: tuple[bytes, ...]
    # An indexed screen's palette (RGB triplets); empty for RGB.
    palette: bytes = b""

    @property
    def nbytes(self) -> int:
        return sum(len(band) for band in self.bands) + len(self.palette)

    @property
    def row_bytes(self) -> int:
        return self.width * PACKABLE_MODES[self.mode]


def packable(image: Image.Image) -> bool:
    return image.mode in PACKABLE_MODES


def pack(image: Image.Image) -> PackedScreen:
    """The image packed band by band (ValueError for a mode screens are never in)."""
    _check_mode(image)
    raw = memoryview(image.tobytes())
    row_bytes = image.width * PACKABLE_MODES[image.mode]
    step = BAND_ROWS * row_bytes
    bands = tuple(_compressed(raw[start : start + step]) for start in range(0, len(raw), step))
    return PackedScreen(image.mode, image.width, image.height, bands, _palette(image))


def repack(
    image: Image.Image, earlier: PackedScreen, rows: Iterable[tuple[int, int]]
) -> PackedScreen:
    """`image` packed, when it is `earlier` with only `rows` changed ((top, bottom)
    spans, bottom exclusive): the untouched bands are `earlier`'s own bytes. A whole
    pack when the two differ in size, mode or palette (a patch turned the screen RGB)."""
    same = (earlier.mode, earlier.width, earlier.height) == (image.mode, image.width, image.height)
    if not same or _palette(image) != earlier.palette:
        return pack(image)
    bands = list(earlier.bands)
    for index in _bands_of(rows, image.height):
        top = index * BAND_ROWS
        band = image.crop((0, top, image.width, min(top + BAND_ROWS, image.height)))
        bands[index] = _compressed(band.tobytes())
    return PackedScreen(image.mode, image.width, image.height, tuple(bands), earlier.palette)


def repaint(earlier: PackedScreen, patches: Sequence[DecodedPatch]) -> PackedScreen:
    """`earlier` with the patches (RGB pixels, top-left point) pasted over it in order,
    never unpacked whole: only the bands the patches touch are unpacked, painted and
    packed again (~0.5 ms for a typed line, against ~3 ms to unpack a 1080p screen
    and ~4 ms to pack it). For an RGB screen only: an indexed one may have to turn
    RGB, band by band it cannot (ValueError)."""
    if earlier.mode != "RGB":
        raise ValueError(f"only an RGB screen is painted packed, not {earlier.mode}")
    touched = _bands_of(((y, y + pixels.height) for pixels, (_, y) in patches), earlier.height)
    bands = list(earlier.bands)
    decompress = _decompressor().decompress
    for index in touched:
        top = index * BAND_ROWS
        rows = min(BAND_ROWS, earlier.height - top)
        band = Image.frombytes("RGB", (earlier.width, rows), decompress(bands[index]))
        for pixels, (x, y) in patches:
            if y < top + rows and y + pixels.height > top:
                band.paste(pixels, (x, y - top))  # PIL clips it to the band
        bands[index] = _compressed(band.tobytes())
    return PackedScreen("RGB", earlier.width, earlier.height, tuple(bands))


def unpack(packed: PackedScreen) -> Image.Image:
    """The screen's pixels, a new image of the caller's own (to paint on, if it likes)."""
    decompress = _decompressor().decompress
    raw = b"".join(decompress(band) for band in packed.bands)
    image = Image.frombytes(packed.mode, (packed.width, packed.height), raw)
    if packed.palette:
        image.putpalette(packed.palette, "RGB")
    return image


def unpack_near(packed: PackedScreen, near: Image.Image, near_packed: PackedScreen) -> Image.Image:
    """`packed`'s pixels made from `near` (a screen it shares bands with, as
    `near_packed` says): a copy of it with only the bands that differ unpacked.
    A whole unpack when the two do not line up (size, mode, palette)."""
    lined_up = (packed.mode, packed.width, packed.height, packed.palette) == (
        near_packed.mode,
        near_packed.width,
        near_packed.height,
        near_packed.palette,
    )
    if not lined_up or near.mode != packed.mode or near.size != (packed.width, packed.height):
        return unpack(packed)
    differ = [
        index
        for index, (ours, theirs) in enumerate(zip(packed.bands, near_packed.bands, strict=True))
        if ours is not theirs
    ]
    if len(differ) * 2 > len(packed.bands):
        return unpack(packed)
    image = near.copy()
    decompress = _decompressor().decompress
    for index in differ:
        top = index * BAND_ROWS
        rows = min(BAND_ROWS, packed.height - top)
        band = Image.frombytes(packed.mode, (packed.width, rows), decompress(packed.bands[index]))
        if packed.palette:
            band.putpalette(packed.palette, "RGB")
        image.paste(band, (0, top))
    return image


def _bands_of(rows: Iterable[tuple[int, int]], height: int) -> list[int]:
    """The bands that (top, bottom) spans of rows (bottom exclusive) touch, in order."""
    touched: set[int] = set()
    for top, bottom in rows:
        first, last = max(0, top) // BAND_ROWS, (min(bottom, height) - 1) // BAND_ROWS
        touched.update(range(first, last + 1))
    return sorted(touched)


def _check_mode(image: Image.Image) -> None:
    if image.mode not in PACKABLE_MODES:
        raise ValueError(f"a screen is indexed or RGB, not {image.mode}")


def _palette(image: Image.Image) -> bytes:
    if image.mode != "P":
        return b""
    palette = image.getpalette("RGB")
    return bytes(palette) if palette is not None else b""


def _compressed(raw: bytes | memoryview) -> bytes:
    """The raw bytes compressed, in an object of their own size. zstandard allocates
    its output for the worst case (the input's size) and shrinks it in place, which
    leaves the rest of that block to the allocator as a hole: a thousand sessions'
    bands held 5 GiB of RSS for 335 MiB of data. A copy of the exact size, and the
    big block freed at once for the next band, holds what the data weighs."""
    return bytes(memoryview(_compressor().compress(raw)))


def _compressor() -> zstandard.ZstdCompressor:
    codec: zstandard.ZstdCompressor | None = getattr(_codecs, "compressor", None)
    if codec is None:
        codec = _codecs.compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    return codec


def _decompressor() -> zstandard.ZstdDecompressor:
    codec: zstandard.ZstdDecompressor | None = getattr(_codecs, "decompressor", None)
    if codec is None:
        codec = _codecs.decompressor = zstandard.ZstdDecompressor()
    return codec
