"""Which input field belongs to a label: the box right of it, or else below it.

A field is found by its outline, not its fill: two long horizontal edges (top
and bottom border, or a fill that differs from the background) spanning the same
columns. That works for white fields on white windows (Tk, most web forms), for
filled fields without borders, and whatever text a field already holds, since
glyph edges are short.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from PIL import Image

# Grey-level step that counts as an edge: low enough for a #f0f0f0 field on white.
_EDGE = 12
Box = tuple[int, int, int, int]  # left, top, right, bottom (exclusive), pixels


@dataclass(frozen=True)
class _Edge:
    y: int  # the edge lies between rows y and y + 1
    start: int
    end: int  # exclusive


def find_field(image: Image.Image, label: Box) -> Box | None:
    """The field nearest right of or below `label` (a text box), or None.

    None also when the label is itself inside a tight box: then it is a button's
    text or a field's placeholder, and the caller should use the label itself.
    """
    grey = np.asarray(image.convert("L"), dtype=np.int16)
    height = max(label[3] - label[1], 8)
    if _enclosed(grey, label, height):
        return None  # text on a button, or a placeholder inside the field itself
    candidates = [
        c for c in (_field_right(grey, label, height), _field_below(grey, label, height)) if c
    ]
    if not candidates:
        return None
    # (gap from the label, box): the nearer one wins.
    return min(candidates, key=lambda c: c[0])[1]


def fields_beside(image: Image.Image, label: Box) -> list[Box]:
    """The fields right of and below `label`, nearest first, without find_field's
    "is the label itself in a box" test.

    That test guesses, and guesses wrong for a label centred above a wide field
    with another field above it (both fields' borders span the label): this is
    where to type next when typing where find_field pointed showed nothing.
    """
    grey = np.asarray(image.convert("L"), dtype=np.int16)
    height = max(label[3] - label[1], 8)
    found = [c for c in (_field_right(grey, label, height), _field_below(grey, label, height)) if c]
    return [box for _, box in sorted(found, key=lambda c: c[0])]


def _enclosed(grey: npt.NDArray[np.int16], label: Box, height: int) -> bool:
    """Whether a tight box (edges just above and below, spanning the text) holds the label."""
    left, top, right, bottom = label
    x0, x1 = max(0, left - 2), min(grey.shape[1], right + 2)
    span = x1 - x0

    def spans(edge: _Edge) -> bool:
        return edge.start <= x0 and edge.end >= x1

    above = _edges(grey, top - 2 * height, top - 1, x0, x1, span)
    below = _edges(grey, bottom, bottom + 2 * height, x0, x1, span)
    return any(spans(e) for e in above) and any(spans(e) for e in below)


def _field_right(grey: npt.NDArray[np.int16], label: Box, height: int) -> tuple[int, Box] | None:
    left, top, right, bottom = label
    center = (top + bottom) // 2
    reach = right + max(400, 25 * height)  # the field must start before this
    min_length = max(2 * height, 24)

    def beside(edge: _Edge) -> bool:
        # An edge that runs past the label belongs to something around it (the
        # button the text is on, a group box), not to a field beside it.
        return right - 1 <= edge.start <= reach

    width = grey.shape[1]
    above = _edges(grey, center - 3 * height, center - 1, left, width, min_length)
    below = _edges(grey, center, center + 10 * height, left, width, min_length)
    # Nearest border above the label's middle, then the nearest matching one below.
    for top_edge in sorted(filter(beside, above), key=lambda e: (-e.y, e.start)):
        for bottom_edge in sorted(filter(beside, below), key=lambda e: (e.y, e.start)):
            box = _box(top_edge, bottom_edge, min_length)
            if box is not None and box[3] - box[1] >= 0.6 * height:
                return box[0] - right, box
    return None


def _field_below(grey: npt.NDArray[np.int16], label: Box, height: int) -> tuple[int, Box] | None:
    left, _, _, bottom = label
    x0, width = max(0, left - 2 * height), grey.shape[1]
    min_length = max(3 * height, 40)

    def reaching(y0: int, y1: int) -> list[_Edge]:
        # Edges from the label's side on, each at its full length: a field wider than
        # the label is (one under a centred label) keeps its left part, where its
        # text starts, in the box.
        found = _edges(grey, y0, y1, 0, width, min_length)
        return [e for e in found if e.end - max(e.start, x0) >= min_length]

    tops = [e for e in reaching(bottom + 1, bottom + 4 * height) if e.start <= left + 2 * height]
    for top_edge in sorted(tops, key=lambda e: e.y):
        # Multi-line fields are tall: look for the bottom border well below.
        lows = reaching(top_edge.y + 1, top_edge.y + 20 * height)
        for bottom_edge in sorted(lows, key=lambda e: e.y):
            box = _box(top_edge, bottom_edge, min_length)
            if box is not None and box[3] - box[1] >= 0.6 * height:
                return box[1] - bottom, box
    return None


def _box(top: _Edge, bottom: _Edge, min_length: int) -> Box | None:
    """The rectangle two edges bound, if they span nearly the same columns (a
    field's borders do; the bottom of a toolbar and the top of a field do not)."""
    start, end = max(top.start, bottom.start), min(top.end, bottom.end)
    longer = max(top.end - top.start, bottom.end - bottom.start)
    if end - start < max(min_length, 0.7 * longer):
        return None
    return (start, top.y + 1, end, bottom.y + 1)


def _edges(
    grey: npt.NDArray[np.int16], y0: int, y1: int, x0: int, x1: int, min_length: int
) -> list[_Edge]:
    """Horizontal edges at least min_length long between rows y0..y1 (inclusive)."""
    y0, y1 = max(0, y0), min(grey.shape[0] - 2, y1)
    if y1 < y0 or x1 - x0 < min_length:
        return []
    steps = np.abs(grey[y0 + 1 : y1 + 2, x0:x1] - grey[y0 : y1 + 1, x0:x1]) > _EDGE
    edges: list[_Edge] = []
    for offset, row in enumerate(steps):
        for start, end in _runs(row):
            if end - start >= min_length:
                edges.append(_Edge(y0 + offset, x0 + start, x0 + end))
    return edges


def _runs(row: npt.NDArray[np.bool_]) -> list[tuple[int, int]]:
    """(start, end) of each run of True."""
    padded = np.concatenate([[False], row, [False]]).astype(np.int8)
    changes = np.flatnonzero(np.diff(padded))
    return [(int(s), int(e)) for s, e in zip(changes[::2], changes[1::2], strict=True)]
