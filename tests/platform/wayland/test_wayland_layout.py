"""Monitor geometry from portal streams: logical <-> physical pixels (pure logic)."""

from __future__ import annotations

import math

import pytest

from holodesk.platform.base import Region
from holodesk.platform.errors import CaptureError
from holodesk.platform.wayland.layout import (
    DesktopLayout,
    Monitor,
    measure_scale,
    monitors_from_streams,
)


def test_streams_become_monitors() -> None:
    monitors = monitors_from_streams(
        [
            (51, {"position": (0, 0), "size": (1920, 1080), "id": "a"}),
            (52, {"position": (-1280, 200), "size": (1280, 1024), "source_type": 1}),
        ]
    )
    assert monitors == [
        Monitor(51, 0, 0, 1920, 1080, "a"),
        Monitor(52, -1280, 200, 1280, 1024, ""),
    ]


def test_streams_without_positions_are_laid_left_to_right() -> None:
    one = monitors_from_streams([(7, {"size": (800, 600)})])
    assert one == [Monitor(7, 0, 0, 800, 600)]
    two = monitors_from_streams([(7, {"size": (800, 600)}), (8, {"size": (1024, 768)})])
    assert [(m.x, m.y) for m in two] == [(0, 0), (800, 0)]


def test_a_stream_without_size_is_an_error() -> None:
    with pytest.raises(CaptureError, match="stream 9 has no size"):
        monitors_from_streams([(9, {"position": (0, 0)})])


def test_scale_is_measured_from_the_screenshot() -> None:
    monitors = [Monitor(1, 0, 0, 1280, 720), Monitor(2, 1280, 0, 1280, 720)]
    assert measure_scale(monitors, (5120, 1440)) == 2.0
    assert measure_scale(monitors, (3840, 1080)) == 1.5
    with pytest.raises(CaptureError, match="empty monitor layout"):
        measure_scale([Monitor(1, 0, 0, 0, 0)], (10, 10))


def test_physical_geometry_with_negative_origins_and_fractional_scale() -> None:
    layout = DesktopLayout(
        (Monitor(1, 0, 0, 1280, 720, "main"), Monitor(2, -1280, -100, 1280, 720)), scale=1.5
    )
    main, side = layout.displays()
    assert main.display_id == "wayland:main"
    assert main.primary
    assert not side.primary
    assert side.display_id == "wayland:2"
    assert main.bounds == Region(0, 0, 1920, 1080)
    assert side.bounds == Region(-1920, -150, 1920, 1080)
    assert main.scale_factor == side.scale_factor == 1.5
    assert layout.desktop() == Region(-1920, -150, 3840, 1230)


@pytest.mark.parametrize(
    ("point", "node", "local"),
    [
        # At 1.5 each pixel is aimed at its centre: (p + 0.5) / 1.5 from the origin.
        ((0, 0), 1, (0.5 / 1.5, 0.5 / 1.5)),
        ((1919, 1079), 1, (1919.5 / 1.5, 1079.5 / 1.5)),
        ((-1, 0), 2, (1280 - 0.5 / 1.5, 100 + 0.5 / 1.5)),
        ((-1920, -150), 2, (0.5 / 1.5, 0.5 / 1.5)),
    ],
)
def test_locate_maps_physical_points_into_a_streams_logical_space(
    point: tuple[int, int], node: int, local: tuple[float, float]
) -> None:
    layout = DesktopLayout(
        (Monitor(1, 0, 0, 1280, 720), Monitor(2, -1280, -100, 1280, 720)), scale=1.5
    )
    monitor, x, y = layout.locate(*point)
    assert monitor.node_id == node
    assert (x, y) == pytest.approx(local)


def test_at_scale_1_a_pixel_is_aimed_at_its_own_corner() -> None:
    layout = DesktopLayout((Monitor(1, 0, 0, 100, 100), Monitor(2, 100, 0, 100, 100)))
    assert layout.locate(0, 0)[1:] == (0.0, 0.0)
    monitor, x, y = layout.locate(150, 99)
    assert (monitor.node_id, x, y) == (2, 50.0, 99.0)


@pytest.mark.parametrize("scale", [1.25, 1.5, 1.75, 2.0, 3.0])
def test_every_pixel_aimed_at_lands_in_itself(scale: float) -> None:
    """Proves: the logical point for each physical pixel maps back into that pixel (the
    pixel holding a point is its floor), odd pixels at 1.5 included."""
    layout = DesktopLayout((Monitor(1, 0, 0, 400, 300),), scale)
    bounds = layout.physical(layout.monitors[0])
    for x in range(bounds.width):
        _, local_x, local_y = layout.locate(x, x % bounds.height)
        assert (math.floor(local_x * scale), math.floor(local_y * scale)) == (x, x % bounds.height)


def test_points_between_monitors_are_refused() -> None:
    layout = DesktopLayout((Monitor(1, 0, 0, 100, 100), Monitor(2, 100, 50, 100, 100)))
    with pytest.raises(ValueError, match="on no monitor"):
        layout.locate(150, 10)  # inside the bounding box, on no monitor


def test_a_layout_needs_monitors_and_a_positive_scale() -> None:
    with pytest.raises(ValueError, match="at least one monitor"):
        DesktopLayout(())
    with pytest.raises(ValueError, match="positive"):
        DesktopLayout((Monitor(1, 0, 0, 1, 1),), scale=0)
