"""Delta frames: send only what changed since the last frame the daemon got.

Most steps of an agent change a few glyphs (a keystroke, a caret, a hover) or
nothing at all, so re-sending the whole screen every step spends bandwidth and
CPU on pixels the daemon already has. With FrameSpec.accept_deltas the client
sends instead:

- an unchanged screen as a delta with no patches (a few bytes);
- a change as a few merged rectangles of new frame pixels, lossless;
- a full frame when there is no base (first frame, a new stream, another
  display or size), when most of the screen changed, or when the patches would
  cost more bytes than the last full frame did.

Changes are found on the full-resolution screen (exact comparison against the
previous screen, 32 px tiles -> connected groups -> merged boxes; only in the
bands of rows the screen source says changed, when it can tell), and only
the frame pixels that depend on them are recomputed (`Downsizer.region`, bit for
bit what a full downsize gives). So what the daemon rebuilds is exactly:

- lossless specs (PNG): the client's full downsized frame, pixel for pixel;
- lossy specs (JPEG, WebP): the last full frame as decoded, with every pixel
  that changed since then replaced losslessly. Unchanged pixels keep the error
  of one lossy encode of their current value; no error accumulates (no drift),
  because nothing is ever diffed against, or re-encoded from, a lossy image.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageChops

from holodesk.client.frames import FramePatch, FrameSpec
from holodesk.client.resize import Box, Downsizer
from holodesk.platform.base import RowBands
from holodesk.values.encoding import ImageEncoding
from holodesk.values.png import encode_png

TILE = 32
# Above this fraction of the frame changed, a full frame is cheaper to make and send.
FULL_FRAME_FRACTION = 0.5
# More separate changes than this are merged (fewer, larger patches: less overhead).
MAX_PATCHES = 16
# Components found before merging; beyond it the change is one box (noise, video).
_MAX_COMPONENTS = 64


@dataclass(frozen=True)
class FramePayload:
    """A frame's payload: full (`data`) or a delta on `base_frame_id`."""

    encoding: ImageEncoding
    data: bytes = b""
    base_frame_id: str = ""
    patches: tuple[FramePatch, ...] = ()


def changed_tiles(
    difference: Image.Image, tile: int = TILE, limit: int | None = None
) -> np.ndarray | None:
    """Which tile x tile cells of a difference image are not all zero, as a bool grid.

    None once more than `limit` cells differ (the caller sends a full frame anyway,
    so the rest of the search would be wasted). Pillow finds the changed area
    (getbbox) without copying the screen; numpy only sees bands of it.
    """
    width, height = difference.size
    grid = np.zeros((-(-height // tile), -(-width // tile)), dtype=bool)
    changed = difference.getbbox()
    if changed is None:
        return grid
    left, top, right, bottom = changed
    count = 0
    for row in range(top // tile, (bottom - 1) // tile + 1):
        band = difference.crop((left, max(top, row * tile), right, min(bottom, (row + 1) * tile)))
        inner = band.getbbox()
        if inner is None:
            continue
        strip = np.asarray(band.crop((inner[0], 0, inner[2], band.height)))
        columns = np.flatnonzero(strip.any(axis=(0, 2))) + left + inner[0]
        grid[row, columns // tile] = True  # (np.unique would import numpy.ma: 50 ms once)
        count += int(np.count_nonzero(grid[row]))
        if limit is not None and count > limit:
            return None
    return grid


def tile_boxes(grid: np.ndarray, tile: int, width: int, height: int) -> list[Box]:
    """Bounding boxes (pixels) of the 8-connected groups of changed tiles, in screen
    order (top, then left)."""
    remaining = set(zip(*(axis.tolist() for axis in np.nonzero(grid)), strict=True))
    boxes: list[Box] = []
    while remaining:
        start = remaining.pop()
        stack = [start]
        top, left = start
        bottom, right = start
        while stack:
            row, column = stack.pop()
            for d_row in (-1, 0, 1):
                for d_column in (-1, 0, 1):
                    cell = (row + d_row, column + d_column)
                    if cell in remaining:
                        remaining.remove(cell)
                        stack.append(cell)
                        top, bottom = min(top, cell[0]), max(bottom, cell[0])
                        left, right = min(left, cell[1]), max(right, cell[1])
        boxes.append(
            Box(
                left * tile,
                top * tile,
                min(width, (right + 1) * tile),
                min(height, (bottom + 1) * tile),
            )
        )
    # In screen order: the components come out of a set, and merging depends on order.
    return sorted(boxes, key=lambda box: (box.top, box.left))


def merge_boxes(boxes: list[Box], max_boxes: int = MAX_PATCHES) -> list[Box]:
    """Merge overlapping boxes, then the cheapest pairs until at most `max_boxes` remain."""
    if len(boxes) > _MAX_COMPONENTS:
        whole = boxes[0]
        for box in boxes[1:]:
            whole = whole.union(box)
        return [whole]
    merged = list(boxes)
    changed = True
    while changed:
        changed = False
        for i in range(len(merged)):
            for j in range(i + 1, len(merged)):
                if merged[i].overlaps(merged[j]):
                    merged[i] = merged[i].union(merged.pop(j))
                    changed = True
                    break
            if changed:
                break
    while len(merged) > max_boxes:
        # The pair whose union adds the least area that was not already sent.
        _, i, j = min(
            (a.union(b).area - a.area - b.area, i, j)
            for i, a in enumerate(merged)
            for j, b in enumerate(merged)
            if i < j
        )
        union = merged[i].union(merged[j])
        merged = [box for k, box in enumerate(merged) if k not in (i, j)]
        merged.append(union)
        merged = merge_boxes(merged, max_boxes=len(merged))  # unions may now overlap
    return merged


def changed_within(before: Image.Image, after: Image.Image, box: Box) -> Box | None:
    """The smallest box inside `box` holding every pixel where the two images differ
    (None: they are equal there)."""
    area = box.as_tuple()
    inner = ImageChops.difference(before.crop(area), after.crop(area)).getbbox()
    if inner is None:
        return None
    return Box(box.left + inner[0], box.top + inner[1], box.left + inner[2], box.top + inner[3])


def encode_patch(image: Image.Image, encoding: ImageEncoding) -> bytes:
    """Lossless: a patch is pasted over pixels that must then be exact."""
    if encoding is not ImageEncoding.WEBP:
        return encode_png(image)
    buffer = io.BytesIO()
    image.save(buffer, "WEBP", lossless=True, quality=50, method=1)
    return buffer.getvalue()


def patch_encoding(spec: FrameSpec) -> ImageEncoding:
    """WebP lossless when the daemon asked for WebP (smaller), PNG otherwise."""
    return ImageEncoding.WEBP if spec.encoding is ImageEncoding.WEBP else ImageEncoding.PNG


class DeltaEncoder:
    """Encodes successive frames of one stream as full frames or deltas on the last one.

    One per stream: after a reconnect the daemon may no longer hold the base, so a
    new stream starts with a new encoder (whose first frame is full).
    """

    def __init__(
        self,
        spec: FrameSpec,
        encode_full: Callable[[Image.Image], bytes],
        tile: int = TILE,
    ) -> None:
        self._spec = spec
        self._encode_full = encode_full
        self._tile = tile
        self._patch_encoding = patch_encoding(spec)
        self._base_id = ""
        self._geometry: Hashable = None
        self._downsizer: Downsizer | None = None
        self._screen: Image.Image | None = None
        # The frame as the client made it (exact, before any lossy encode).
        self._frame: Image.Image | None = None
        self._full_bytes = 0

    def reset(self) -> None:
        """Forget the base: the next frame is full."""
        self._base_id = ""
        self._screen = None
        self._frame = None

    def encode(
        self,
        screen: Image.Image,
        size: tuple[int, int],
        frame_id: str,
        geometry: Hashable,
        changed_rows: RowBands | None = None,
    ) -> FramePayload:
        """Encode this screen (RGB, full resolution) as the frame `frame_id`.

        `geometry` names where it came from (display, region, scale): a delta is
        only made on a base of the same geometry and size. `changed_rows`, when the
        screen source knew it (platform Grab): bands of rows [top, bottom) outside
        which this screen equals the one of the previous call; only they are compared.
        """
        if (
            self._downsizer is None
            or self._downsizer.source != screen.size
            or self._downsizer.size != size
        ):
            self._downsizer = Downsizer(screen.size, size)
            self.reset()
        delta = None
        if self._base_id and geometry == self._geometry and self._screen is not None:
            delta = self._delta(screen, changed_rows)
        if delta is None:
            delta = self._full(screen)
        self._base_id, self._geometry, self._screen = frame_id, geometry, screen
        return delta

    def _full(self, screen: Image.Image) -> FramePayload:
        assert self._downsizer is not None
        frame = self._downsizer.full(screen)
        data = self._encode_full(frame)
        self._frame = frame if frame is not screen else frame.copy()
        self._full_bytes = len(data)
        return FramePayload(self._spec.encoding, data)

    def _delta(self, screen: Image.Image, changed_rows: RowBands | None) -> FramePayload | None:
        """Patches on the base, or None when a full frame is the better choice."""
        assert self._screen is not None
        assert self._frame is not None
        assert self._downsizer is not None
        width, height = screen.size
        bands = tile_bands(
            ((0, height),) if changed_rows is None else changed_rows, self._tile, height
        )
        if not bands:
            return FramePayload(self._spec.encoding, base_frame_id=self._base_id)
        tiles = (-(-height // self._tile)) * (-(-width // self._tile))
        budget = int(tiles * FULL_FRAME_FRACTION)
        groups: list[Box] = []
        for top, bottom in bands:
            found = self._changed_tiles_in(screen, top, bottom, budget)
            if found is None:
                return None
            boxes, used = found
            budget -= used
            groups.extend(boxes)
        # Bands are apart by whole unchanged rows of tiles, so these are the groups a
        # whole-screen search finds, in the same order: the patches do not depend on
        # how the source reported its changes.
        changed = [
            self._downsizer.affected(exact)
            for box in merge_boxes(groups)
            if (exact := changed_within(self._screen, screen, box)) is not None
        ]
        targets = merge_boxes([box for box in changed if box.area], max_boxes=MAX_PATCHES)
        frame_area = self._frame.width * self._frame.height
        if sum(box.area for box in targets) > frame_area * FULL_FRAME_FRACTION:
            return None
        patches: list[FramePatch] = []
        # Painted in place: if this ends in a full frame after all, _full replaces it.
        updated = self._frame
        for target in targets:
            pixels = self._downsizer.region(screen, target)
            before = updated.crop(target.as_tuple())
            updated.paste(pixels, (target.left, target.top))
            inner = changed_within(before, pixels, Box(0, 0, target.width, target.height))
            if inner is None:
                continue  # the screen changed below what the frame's resolution shows
            patch = pixels.crop(inner.as_tuple())
            patches.append(
                FramePatch(
                    x=target.left + inner.left,
                    y=target.top + inner.top,
                    width=inner.width,
                    height=inner.height,
                    encoding=self._patch_encoding,
                    data=encode_patch(patch, self._patch_encoding),
                )
            )
        size = sum(len(p.data) for p in patches)
        if size >= self._full_bytes or (self._spec.max_bytes and size > self._spec.max_bytes):
            return None
        return FramePayload(
            self._spec.encoding, base_frame_id=self._base_id, patches=tuple(patches)
        )

    def _changed_tiles_in(
        self, screen: Image.Image, top: int, bottom: int, budget: int
    ) -> tuple[list[Box], int] | None:
        """The groups of changed tiles (screen pixels) in rows [top, bottom), and how
        many tiles changed; None past `budget` tiles."""
        assert self._screen is not None
        width, height = screen.size
        if (top, bottom) == (0, height):
            difference = ImageChops.difference(self._screen, screen)
        else:
            band = (0, top, width, bottom)
            difference = ImageChops.difference(self._screen.crop(band), screen.crop(band))
        grid = changed_tiles(difference, self._tile, limit=budget)
        if grid is None:
            return None
        boxes = [
            Box(box.left, box.top + top, box.right, box.bottom + top)
            for box in tile_boxes(grid, self._tile, width, bottom - top)
        ]
        return boxes, int(np.count_nonzero(grid))


def tile_bands(bands: RowBands, tile: int, height: int) -> RowBands:
    """Row bands widened to whole rows of tiles (so each band's grid lines up with
    the screen's), and joined where they then touch."""
    joined: list[tuple[int, int]] = []
    for top, bottom in sorted(bands):
        if bottom <= top:
            continue
        aligned = (top // tile * tile, min(height, -(-bottom // tile) * tile))
        if joined and aligned[0] <= joined[-1][1]:
            joined[-1] = (joined[-1][0], max(joined[-1][1], aligned[1]))
        else:
            joined.append(aligned)
    return tuple(joined)
