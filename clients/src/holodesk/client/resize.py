"""Downsizing a screen to the daemon's box, in full or one changed region at a time.

A frame is made in three explicit stages: an optional integer box-reduce (for
factors of 4 and more, as Pillow's own `reducing_gap=2.0` does), a horizontal-only
Lanczos pass, then a vertical-only one, with an 8-bit image between them. Each
output row of the horizontal pass depends on one input row only, each output
column of the vertical pass on one column only, and both passes always run with
the coefficients of the whole frame. So `Downsizer.region()` recomputes a
rectangle of the frame bit for bit as `Downsizer.full()` does, from a band of the
screen a few pixels larger than the change: a keystroke on a 4K screen costs a
strip of the frame, not the frame (what makes delta frames cheap). The passes are
separate calls on purpose: Pillow's one-call resize picks its own pass order,
which is not part of its API.

The same independence lets a large frame be made on several cores: the
horizontal pass in bands of rows, the vertical one in strips of columns, each
with the whole frame's coefficients, so the result is bit for bit the one-call
result (Pillow releases the GIL while it resamples). At 4K that first, full
frame of a stream is ~175 ms of Lanczos on one core; on two it took ~105.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from PIL import Image

# Pillow's Lanczos support (taps either side at scale 1), and the reduce rule.
_LANCZOS_SUPPORT = 3.0
_REDUCING_GAP = 2.0
_FILTER = Image.Resampling.LANCZOS
# Below this many screen pixels (a 1080p or 1200p screen) two cores saved nothing
# measurable; from 2560x1440 up they took 35-40% off (tests/bench).
PARALLEL_FROM_PIXELS = 3_000_000


@dataclass(frozen=True)
class Box:
    """A half-open pixel rectangle [left, right) x [top, bottom)."""

    left: int
    top: int
    right: int
    bottom: int

    @property
    def width(self) -> int:
        return self.right - self.left

    @property
    def height(self) -> int:
        return self.bottom - self.top

    @property
    def area(self) -> int:
        return self.width * self.height

    def union(self, other: Box) -> Box:
        return Box(
            min(self.left, other.left),
            min(self.top, other.top),
            max(self.right, other.right),
            max(self.bottom, other.bottom),
        )

    def overlaps(self, other: Box) -> bool:
        return (
            self.left < other.right
            and other.left < self.right
            and self.top < other.bottom
            and other.top < self.bottom
        )

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.left, self.top, self.right, self.bottom)


class _Axis:
    """One axis of the Lanczos pass: which input pixels each output pixel reads.

    Mirrors Pillow's precompute_coeffs (center = in0 + (i + 0.5) * scale, support
    scaled when shrinking); a one-pixel margin absorbs any rounding difference,
    so the windows here are never narrower than Pillow's.
    """

    def __init__(self, in_size: int, in_extent: float, out_size: int) -> None:
        scale = in_extent / out_size
        support = _LANCZOS_SUPPORT * max(scale, 1.0)
        centers = (np.arange(out_size) + 0.5) * scale
        self.in_size = in_size
        self.out_size = out_size
        self.first = np.maximum(0, np.floor(centers - support + 0.5).astype(np.int64) - 1)
        self.end = np.minimum(in_size, np.floor(centers + support + 0.5).astype(np.int64) + 1)

    def outputs_reading(self, start: int, stop: int) -> tuple[int, int]:
        """Output range whose windows touch inputs [start, stop)."""
        low = int(np.searchsorted(self.end, start, side="right"))
        high = int(np.searchsorted(self.first, stop, side="left"))
        return low, max(low, high)

    def inputs_of(self, start: int, stop: int) -> tuple[int, int]:
        """Input range that outputs [start, stop) read."""
        return int(self.first[start]), int(self.end[stop - 1])


def usable_cores() -> int:
    """The cores this process may run on (its affinity, where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class Downsizer:
    """Resizes screens of one size to one frame size, fully or region by region."""

    def __init__(
        self, source: tuple[int, int], size: tuple[int, int], workers: int | None = None
    ) -> None:
        """`workers`: threads for `full()`; None: one per usable core for screens of
        PARALLEL_FROM_PIXELS or more, else one."""
        width, height = source
        self.source = source
        self.size = size
        self.identity = source == size
        if workers is None:
            workers = usable_cores() if width * height >= PARALLEL_FROM_PIXELS else 1
        self.workers = max(1, workers)
        # Pillow's reducing_gap rule: box-reduce by int(factor / gap) first.
        self.factor = (
            max(1, int(width / size[0] / _REDUCING_GAP)),
            max(1, int(height / size[1] / _REDUCING_GAP)),
        )
        fx, fy = self.factor
        self.reduced = (math.ceil(width / fx), math.ceil(height / fy))
        # The resize box in reduced pixels: a partial last block covers 1/f of a pixel.
        self._extent = (width / fx, height / fy)
        self._horizontal = _Axis(self.reduced[0], self._extent[0], size[0])
        self._vertical = _Axis(self.reduced[1], self._extent[1], size[1])

    def full(self, screen: Image.Image) -> Image.Image:
        if self.identity:
            return screen
        reduced = self._reduce(screen, None)
        if self.workers == 1:
            return self._vertical_pass(self._horizontal_pass(reduced))
        with ThreadPoolExecutor(self.workers, thread_name_prefix="downsize") as pool:
            rows = _in_parts(pool, reduced, self._horizontal_pass, self.workers, along_rows=True)
            return _in_parts(pool, rows, self._vertical_pass, self.workers, along_rows=False)

    def affected(self, changed: Box) -> Box:
        """The frame rectangle whose pixels depend on the changed screen rectangle."""
        if self.identity:
            return changed
        fx, fy = self.factor
        left, right = self._horizontal.outputs_reading(changed.left // fx, -(-changed.right // fx))
        top, bottom = self._vertical.outputs_reading(changed.top // fy, -(-changed.bottom // fy))
        return Box(left, top, right, bottom)

    def region(self, screen: Image.Image, target: Box) -> Image.Image:
        """The pixels of `full(screen)` inside `target`, computed from a band only."""
        if self.identity:
            return screen.crop(target.as_tuple())
        # Rows of the reduced screen the vertical pass reads for the target's rows.
        row_first, row_end = self._vertical.inputs_of(target.top, target.bottom)
        fy = self.factor[1]
        band_box = Box(0, row_first * fy, self.source[0], min(self.source[1], row_end * fy))
        band = self._reduce(screen, band_box)
        band = self._horizontal_pass(band)
        columns = band.crop((target.left, 0, target.right, band.height))
        # A full-height strip of the target's columns: the vertical pass then runs
        # with the frame's own coefficients. Rows outside the band stay black; the
        # target's rows never read them.
        strip = Image.new(screen.mode, (target.width, self.reduced[1]))
        strip.paste(columns, (0, row_first))
        return self._vertical_pass(strip).crop((0, target.top, target.width, target.bottom))

    def _horizontal_pass(self, image: Image.Image) -> Image.Image:
        """Only the horizontal pass (same height, box spanning whole rows)."""
        if self.size[0] == self.reduced[0] and self._extent[0] == self.reduced[0]:
            return image
        box = (0.0, 0.0, self._extent[0], float(image.height))
        return image.resize((self.size[0], image.height), _FILTER, box=box)

    def _vertical_pass(self, image: Image.Image) -> Image.Image:
        """Only the vertical pass (same width, box spanning whole columns)."""
        if self.size[1] == self.reduced[1] and self._extent[1] == self.reduced[1]:
            return image
        box = (0.0, 0.0, float(image.width), self._extent[1])
        return image.resize((image.width, self.size[1]), _FILTER, box=box)

    def _reduce(self, screen: Image.Image, box: Box | None) -> Image.Image:
        """Box-reduce the screen (or a block-aligned band of it) by the integer factor."""
        if box is None:
            box = Box(0, 0, *self.source)
        if self.factor == (1, 1):
            return screen if box == Box(0, 0, *self.source) else screen.crop(box.as_tuple())
        return screen.reduce(self.factor, box=box.as_tuple())


def _in_parts(
    pool: ThreadPoolExecutor,
    image: Image.Image,
    resample: Callable[[Image.Image], Image.Image],
    parts: int,
    along_rows: bool,
) -> Image.Image:
    """`resample(image)` computed on `parts` bands of rows (a horizontal pass) or
    strips of columns (a vertical pass) in the pool, then put together."""
    length = image.height if along_rows else image.width
    cuts = [length * k // parts for k in range(parts + 1)]
    pieces = [(start, stop) for start, stop in itertools.pairwise(cuts) if stop > start]

    def one(piece: tuple[int, int]) -> Image.Image:
        start, stop = piece
        box = (0, start, image.width, stop) if along_rows else (start, 0, stop, image.height)
        return resample(image.crop(box))

    results = list(pool.map(one, pieces))
    width = results[0].width if along_rows else sum(part.width for part in results)
    height = sum(part.height for part in results) if along_rows else results[0].height
    whole = Image.new(image.mode, (width, height))
    offset = 0
    for part in results:
        whole.paste(part, (0, offset) if along_rows else (offset, 0))
        offset += part.height if along_rows else part.width
    return whole
