"""ZRLE (RFC 6143 section 7.7.6) decoding into numpy arrays.

A ZRLE rectangle is zlib data, one zlib stream for the whole connection, that
inflates to 64x64 tiles, each raw, solid, a packed palette, or run-length
encoded. Raw, solid and palette tiles are decoded with numpy in one step each;
run-length tiles need a Python loop over their runs (one iteration per run,
not per pixel), then one numpy repeat.

Pixels are "CPIXELs": for the BGRX format this client asks for, the three
bytes B, G, R.
"""

from __future__ import annotations

import zlib

import numpy as np
import numpy.typing as npt

from holodesk.platform.vnc.protocol import ProtocolError

TILE = 64
CPIXEL = 3  # bytes of one compressed pixel (B, G, R)

Pixels = npt.NDArray[np.uint8]


class ZrleDecoder:
    """One per connection: the zlib stream continues from rectangle to rectangle."""

    def __init__(self) -> None:
        self._inflater = zlib.decompressobj()

    def inflate(self, compressed: bytes) -> bytes:
        try:
            return self._inflater.decompress(compressed)
        except zlib.error as error:
            raise ProtocolError(f"corrupt ZRLE data: {error}") from error

    def decode(self, compressed: bytes, width: int, height: int) -> Pixels:
        """The rectangle's pixels as an array of shape (height, width, 3), B G R."""
        return decode_tiles(self.inflate(compressed), width, height)


def decode_tiles(data: bytes, width: int, height: int) -> Pixels:
    """Decode inflated ZRLE data covering a width x height rectangle."""
    out = np.empty((height, width, CPIXEL), dtype=np.uint8)
    reader = _Reader(data)
    try:
        for top in range(0, height, TILE):
            tile_height = min(TILE, height - top)
            for left in range(0, width, TILE):
                tile_width = min(TILE, width - left)
                out[top : top + tile_height, left : left + tile_width] = _tile(
                    reader, tile_width, tile_height
                )
    except (IndexError, ValueError) as error:
        # Short data, or an index past the palette: the stream is not what it claims.
        raise ProtocolError(f"malformed ZRLE tile data: {error}") from error
    if reader.pos != len(data):
        raise ProtocolError(f"ZRLE data has {len(data) - reader.pos} bytes past its last tile")
    return out


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        value = self.data[self.pos]
        self.pos += 1
        return value

    def array(self, count: int) -> Pixels:
        if self.pos + count > len(self.data):
            raise ValueError(f"{count} bytes wanted, {len(self.data) - self.pos} left")
        values = np.frombuffer(self.data, dtype=np.uint8, count=count, offset=self.pos)
        self.pos += count
        return values

    def run_length(self) -> int:
        """A run length: bytes summed until one is not 255, plus one."""
        length = 1
        while True:
            value = self.byte()
            length += value
            if value != 255:
                return length


def _tile(reader: _Reader, width: int, height: int) -> Pixels:
    subencoding = reader.byte()
    count = width * height
    if subencoding == 0:
        return reader.array(count * CPIXEL).reshape(height, width, CPIXEL)
    if subencoding == 1:
        return np.broadcast_to(reader.array(CPIXEL), (height, width, CPIXEL))
    if 2 <= subencoding <= 16:
        palette = reader.array(subencoding * CPIXEL).reshape(subencoding, CPIXEL)
        return palette[_packed_indices(reader, subencoding, width, height)]
    if subencoding == 128:
        return _plain_rle(reader, count).reshape(height, width, CPIXEL)
    if subencoding >= 130:
        size = subencoding - 128
        palette = reader.array(size * CPIXEL).reshape(size, CPIXEL)
        return _palette_rle(reader, palette, count).reshape(height, width, CPIXEL)
    raise ProtocolError(f"ZRLE tile subencoding {subencoding} does not exist")


def _packed_indices(reader: _Reader, size: int, width: int, height: int) -> npt.NDArray[np.intp]:
    """Palette indices packed 1, 2 or 4 bits each, most significant first, rows byte-aligned."""
    bits = 1 if size == 2 else 2 if size <= 4 else 4
    row_bytes = (width * bits + 7) // 8
    packed = reader.array(row_bytes * height).reshape(height, row_bytes)
    unpacked = np.unpackbits(packed, axis=1).reshape(height, row_bytes * 8 // bits, bits)
    weights = (1 << np.arange(bits - 1, -1, -1)).astype(np.intp)
    indices: npt.NDArray[np.intp] = (unpacked * weights).sum(axis=2, dtype=np.intp)[:, :width]
    if int(indices.max()) >= size:
        raise ValueError(f"palette index {int(indices.max())} past a palette of {size}")
    return indices


def _plain_rle(reader: _Reader, count: int) -> Pixels:
    starts: list[int] = []
    runs: list[int] = []
    total = 0
    while total < count:
        starts.append(reader.pos)
        reader.pos += CPIXEL
        run = reader.run_length()
        runs.append(run)
        total += run
    if total != count:
        raise ValueError(f"runs cover {total} pixels of a {count}-pixel tile")
    if reader.pos > len(reader.data):
        raise ValueError("the last run's pixel is cut short")
    flat = np.frombuffer(reader.data, dtype=np.uint8)
    offsets = np.asarray(starts)[:, None] + np.arange(CPIXEL)
    return np.repeat(flat[offsets], runs, axis=0)


def _palette_rle(reader: _Reader, palette: Pixels, count: int) -> Pixels:
    indices: list[int] = []
    runs: list[int] = []
    total = 0
    while total < count:
        value = reader.byte()
        if value < 128:
            indices.append(value)
            runs.append(1)
            total += 1
        else:
            indices.append(value - 128)
            run = reader.run_length()
            runs.append(run)
            total += run
    if total != count:
        raise ValueError(f"runs cover {total} pixels of a {count}-pixel tile")
    return np.repeat(palette[np.asarray(indices)], runs, axis=0)
