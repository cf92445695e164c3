"""Incremental capture (ScreenSource.grab_since) on a real Xvfb: every image equals a
fresh full grab, and the changed rows it reports cover every pixel that changed."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pytest
from Xlib import X
from Xlib.display import Display

from holodesk.platform.base import Backend, Grab, Region
from holodesk.platform.select import open_backend
from tests.support.xvfb import xvfb

pytestmark = pytest.mark.x11

WIDTH, HEIGHT = 320, 200


@pytest.fixture(scope="module")
def desktop() -> Iterator[tuple[Backend, Display]]:
    with xvfb(WIDTH, HEIGHT) as name:
        backend = open_backend("x11", display=name)
        painter = Display(name)
        try:
            yield backend, painter
        finally:
            painter.close()
            backend.close()


def paint(painter: Display, box: tuple[int, int, int, int], rgb: tuple[int, int, int]) -> None:
    """A filled rectangle straight onto the root window (24-bit TrueColor pixel)."""
    root = painter.screen().root
    r, g, b = rgb
    gc = root.create_gc(foreground=(r << 16) | (g << 8) | b, subwindow_mode=X.IncludeInferiors)
    x, y, w, h = box
    root.fill_rectangle(gc, x, y, w, h)
    gc.free()
    painter.sync()


def pixels(grab: Grab) -> np.ndarray:
    return np.asarray(grab.image.convert("RGB"))


@pytest.mark.parametrize(
    "region", [Region(0, 0, WIDTH, HEIGHT), Region(37, 21, 150, 101)], ids=["screen", "part"]
)
def test_every_incremental_grab_equals_a_full_one(
    desktop: tuple[Backend, Display], region: Region
) -> None:
    backend, painter = desktop
    screen = backend.screen
    rng = np.random.default_rng(7)
    previous = screen.grab_since(region)
    assert previous.changed_rows is None  # nothing to compare with yet
    steps_with_changes = 0
    for step in range(40):
        painted = step % 4 != 3  # every fourth step leaves the screen alone
        if painted:
            # Starting inside the region, reaching past it at times.
            x = int(rng.integers(region.x, region.x + region.width))
            y = int(rng.integers(region.y, region.y + region.height))
            w, h = int(rng.integers(1, WIDTH - x + 1)), int(rng.integers(1, 40))
            rgb = tuple(int(v) for v in rng.integers(0, 256, 3))
            paint(painter, (x, y, w, h), rgb)  # type: ignore[arg-type]
        before = pixels(previous)
        grab = screen.grab_since(region, previous)
        truth = np.asarray(screen.grab(region))
        np.testing.assert_array_equal(pixels(grab), truth)
        changed = np.flatnonzero((before != truth).any(axis=(1, 2)))
        bands = grab.changed_rows
        assert bands is not None
        assert all(top < bottom for top, bottom in bands)
        assert all(a[1] < b[0] for a, b in itertools.pairwise(bands))  # in order, apart
        reported = np.zeros(region.height, dtype=bool)
        for top, bottom in bands:
            reported[top:bottom] = True
        assert reported[changed].all()  # every changed row is in a band
        if changed.size:
            steps_with_changes += 1
        else:
            assert bands == ()
            assert grab.image is previous.image  # nothing copied for an idle screen
        previous = grab
    assert steps_with_changes >= 15  # the paints really reached the screen


def test_another_region_is_a_fresh_grab(desktop: tuple[Backend, Display]) -> None:
    backend, _ = desktop
    first = backend.screen.grab_since(Region(0, 0, 100, 100))
    other = backend.screen.grab_since(Region(10, 10, 100, 100), first)
    assert other.changed_rows is None
    np.testing.assert_array_equal(
        pixels(other), np.asarray(backend.screen.grab(Region(10, 10, 100, 100)))
    )
