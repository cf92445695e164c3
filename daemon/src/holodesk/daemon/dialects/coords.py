"""Model space <-> frame pixels, exactly.

A model answers in its own convention about the image *it saw*, which may be a
resized copy of the frame:

- ``normalized_1000``: 0..1000 on each axis of the image (Holo2, Qwen3-VL family);
  independent of any resize.
- ``resized_pixels``: absolute pixels of the resized image (Holo1/1.5, Qwen2.5-VL);
  mapping needs the resized size, which the resize rule reproduces exactly.
- ``unit``: 0..1 on each axis.

Resize rules say which image the model sees for a frame: Qwen-VL `SmartResize`
(sides multiples of a patch factor), `TileResize` (Nemotron-VL / InternVL
dynamic tiling: the image stretched onto a grid of square tiles), `MaxBox`,
`NoResize`. Each also estimates the image's prompt tokens where its model
family defines them (`image_tokens`), because every kept screenshot costs prefill.

Where the model's own image processor would resize a frame exactly as its rule
says (`processor_agrees`), an in-process engine can be handed the frame's pixels
and left to do it (see `Dialect.model_image`).

Mapping is a pure scale per axis (continuous coordinates, no rounding): frame
x = model x * frame width / model extent. The client rounds once, at the end.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from functools import cache

from holodesk.daemon.geometry import Point, Size
from holodesk.values.fit import fit_in_box as fit


class CoordinateConvention(enum.Enum):
    NORMALIZED_1000 = "normalized_1000"
    RESIZED_PIXELS = "resized_pixels"
    UNIT = "unit"


@dataclass(frozen=True)
class SmartResize:
    """Qwen-VL style: both sides multiples of `factor`, pixel count within bounds,
    aspect ratio kept as closely as those allow."""

    factor: int = 28
    min_pixels: int = 56 * 56
    max_pixels: int = 14 * 14 * 4 * 1280

    def apply(self, size: Size) -> Size:
        return smart_resize(size, self.factor, self.min_pixels, self.max_pixels)

    def image_tokens(self, size: Size) -> int | None:
        """One token per factor x factor block (a 2x2 merge of 14 or 16 px patches)."""
        out = self.apply(size)
        return (out.width // self.factor) * (out.height // self.factor)

    def processor_agrees(self, size: Size) -> bool:
        """Qwen's processor makes `apply(size)` too, except at the edges where ours
        differs: sides under one factor, aspect ratios over 200 (it raises), and thin
        strips our rule trims to stay within max_pixels."""
        short, long = sorted((size.width, size.height))
        if short < self.factor or long > 200 * short:
            return False
        untrimmed = qwen_smart_resize(size, self.factor, self.min_pixels, self.max_pixels)
        return untrimmed == self.apply(size)


@dataclass(frozen=True)
class MaxBox:
    """Fit inside max_width x max_height, aspect ratio kept, never upscaled."""

    max_width: int
    max_height: int

    def apply(self, size: Size) -> Size:
        return fit_in_box(size, self.max_width, self.max_height)

    def image_tokens(self, size: Size) -> int | None:
        return None  # depends on a processor this rule knows nothing about

    def processor_agrees(self, size: Size) -> bool:
        return False  # holodesk's own rule: no model processor applies it


@dataclass(frozen=True)
class NoResize:
    def apply(self, size: Size) -> Size:
        return size

    def image_tokens(self, size: Size) -> int | None:
        return None

    def processor_agrees(self, size: Size) -> bool:
        return False  # nothing to resize, so nothing to leave to an engine


@dataclass(frozen=True)
class TileResize:
    """Nemotron-VL / InternVL dynamic tiling.

    The processor picks a grid of `cols x rows` square tiles (at most `max_tiles`)
    whose aspect ratio is closest to the image's, stretches the image onto it and
    cuts it into tiles; with more than one tile it adds a thumbnail of the whole
    image. Each tile costs `tokens_per_tile` tokens (Nemotron Nano VL: 512 px
    tiles, 16 px patches, 2x2 pixel shuffle -> 256).

    `apply` gives the grid-sized image, which is what the vision tower sees: the
    daemon sends exactly that, so the engine's own tiling finds the same grid and
    resamples nothing (grid sizes are fixed points of `apply`).
    """

    tile_size: int = 512
    max_tiles: int = 12
    min_tiles: int = 1
    thumbnail: bool = True
    tokens_per_tile: int = 256

    def __post_init__(self) -> None:
        if self.tile_size <= 0 or self.tokens_per_tile <= 0:
            raise ValueError(f"bad tile parameters {self.tile_size=} {self.tokens_per_tile=}")
        if not 1 <= self.min_tiles <= self.max_tiles:
            raise ValueError(f"bad tile counts {self.min_tiles=} {self.max_tiles=}")

    def grid(self, size: Size) -> tuple[int, int]:
        """(cols, rows) the vision tower ends up with for an image of this size.

        The processor's rule is not idempotent: with 16 tiles allowed, a 1058x1115
        image gets 3x3, but the 1536x1536 image of that grid gets 4x4 (it holds more
        than half of 4x4's pixels). The grid is followed to its fixed point, so the
        image the daemon sends is one the engine's tiling keeps as it is.
        """
        cols, rows = tile_grid(size, self.tile_size, self.min_tiles, self.max_tiles)
        while True:
            grid_size = Size(cols * self.tile_size, rows * self.tile_size)
            again = tile_grid(grid_size, self.tile_size, self.min_tiles, self.max_tiles)
            if again == (cols, rows):
                return cols, rows
            cols, rows = again

    def apply(self, size: Size) -> Size:
        cols, rows = self.grid(size)
        return Size(cols * self.tile_size, rows * self.tile_size)

    def tiles(self, size: Size) -> int:
        """Tiles the vision tower encodes, the thumbnail included."""
        cols, rows = self.grid(size)
        count = cols * rows
        return count + 1 if self.thumbnail and count > 1 else count

    def image_tokens(self, size: Size) -> int | None:
        return self.tiles(size) * self.tokens_per_tile

    def processor_agrees(self, size: Size) -> bool:
        """The processor picks its grid once; it is ours where that first choice is
        already the fixed point `grid` follows (almost every screen: 1920x1080,
        2560x1440, 3840x2160, 1280x800 ...)."""
        one_shot = tile_grid(size, self.tile_size, self.min_tiles, self.max_tiles)
        return one_shot == self.grid(size)


ResizeRule = SmartResize | TileResize | MaxBox | NoResize


@cache
def _grids(min_tiles: int, max_tiles: int) -> tuple[tuple[int, int], ...]:
    """Every (cols, rows) with min_tiles <= cols * rows <= max_tiles, fewest tiles
    first (ties: fewer columns first, so the order is fixed)."""
    grids = [
        (cols, rows)
        for cols in range(1, max_tiles + 1)
        for rows in range(1, max_tiles // cols + 1)
        if min_tiles <= cols * rows
    ]
    return tuple(sorted(grids, key=lambda g: (g[0] * g[1], g[0])))


def tile_grid(size: Size, tile_size: int, min_tiles: int, max_tiles: int) -> tuple[int, int]:
    """Our implementation of InternVL's dynamic-tiling grid choice (also Nemotron
    Nano VL's): the grid whose cols/rows is closest to the image's aspect ratio;
    among grids with the same ratio (2x1, 4x2, ...), the larger one while the
    image has more than half of that grid's pixels. Floats on purpose, with the
    same expressions, so ties break exactly as in the engine's processor.
    """
    if size.width <= 0 or size.height <= 0:
        raise ValueError(f"cannot tile an empty image {size.width}x{size.height}")
    aspect = size.width / size.height
    area = size.width * size.height
    best_diff = math.inf
    best = (1, 1)
    for cols, rows in _grids(min_tiles, max_tiles):
        diff = abs(aspect - cols / rows)
        if diff < best_diff:
            best_diff = diff
            best = (cols, rows)
        elif diff == best_diff and area > 0.5 * tile_size * tile_size * cols * rows:
            best = (cols, rows)
    return best


def smart_resize(size: Size, factor: int, min_pixels: int, max_pixels: int) -> Size:
    """Our implementation of the public Qwen2-VL resize rule.

    Differs only at the edges: where Qwen raises, sides shorter than `factor`
    are rounded up to one factor, so tiny frames still get a valid size; and
    results never exceed max_pixels (unless factor squared does).
    """
    rounded = qwen_smart_resize(size, factor, min_pixels, max_pixels)
    new_w, new_h = rounded.width, rounded.height
    # Thin strips can still overshoot (Qwen's rule does too); trim the long side so the
    # model never gets more pixels than allowed. Aligned sizes within bounds are fixed
    # points of this function, so an engine that resizes again changes nothing.
    while new_w * new_h > max_pixels and max(new_w, new_h) > factor:
        if new_w >= new_h:
            new_w -= factor
        else:
            new_h -= factor
    return Size(new_w, new_h)


def qwen_smart_resize(size: Size, factor: int, min_pixels: int, max_pixels: int) -> Size:
    """The public Qwen2-VL rule itself, with sides kept at one factor at least (where
    Qwen raises); `smart_resize` trims what this can still overshoot."""
    if factor <= 0 or min_pixels <= 0 or max_pixels < min_pixels:
        raise ValueError(f"bad smart resize parameters {factor=} {min_pixels=} {max_pixels=}")
    w, h = size.width, size.height
    if w <= 0 or h <= 0:
        raise ValueError(f"cannot resize an empty image {w}x{h}")
    new_w = max(factor, round(w / factor) * factor)
    new_h = max(factor, round(h / factor) * factor)
    if new_w * new_h > max_pixels:
        beta = math.sqrt(w * h / max_pixels)
        new_w = max(factor, math.floor(w / beta / factor) * factor)
        new_h = max(factor, math.floor(h / beta / factor) * factor)
    elif new_w * new_h < min_pixels:
        beta = math.sqrt(min_pixels / (w * h))
        new_w = math.ceil(w * beta / factor) * factor
        new_h = math.ceil(h * beta / factor) * factor
    return Size(new_w, new_h)


def fit_in_box(size: Size, max_width: int, max_height: int) -> Size:
    """Largest size inside the box with the same aspect ratio; 0 means unbounded.
    The contract's rule, shared with the client: holodesk.values.fit."""
    return Size(*fit(size.width, size.height, max_width, max_height))


@dataclass(frozen=True)
class ImageGeometry:
    """How one frame relates to the image the model saw and the model's coordinates."""

    frame: Size
    model_image: Size
    convention: CoordinateConvention

    @classmethod
    def for_frame(
        cls, frame: Size, resize: ResizeRule, convention: CoordinateConvention
    ) -> ImageGeometry:
        return cls(frame=frame, model_image=resize.apply(frame), convention=convention)

    @property
    def extent(self) -> tuple[float, float]:
        """The largest model coordinate on each axis (inclusive)."""
        if self.convention is CoordinateConvention.NORMALIZED_1000:
            return 1000.0, 1000.0
        if self.convention is CoordinateConvention.UNIT:
            return 1.0, 1.0
        return float(self.model_image.width), float(self.model_image.height)

    def contains_model(self, x: float, y: float) -> bool:
        ex, ey = self.extent
        return math.isfinite(x) and math.isfinite(y) and 0.0 <= x <= ex and 0.0 <= y <= ey

    def to_frame(self, point: Point) -> Point:
        ex, ey = self.extent
        return Point(point.x * self.frame.width / ex, point.y * self.frame.height / ey)

    def to_model(self, point: Point) -> Point:
        ex, ey = self.extent
        return Point(point.x * ex / self.frame.width, point.y * ey / self.frame.height)
