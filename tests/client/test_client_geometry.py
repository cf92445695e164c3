"""Frame pixels -> virtual desktop pixels: exact, rounded once, never clamped off-screen."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from holodesk.client.frames import SentFrame
from holodesk.client.geometry import OffScreenError, desktop_to_frame, frame_to_desktop, map_point
from holodesk.platform.base import DisplayInfo, Region
from holodesk.values.encoding import ImageEncoding

from .conftest import TWO_DISPLAYS


def _frame(source: Region, width: int, height: int, scale: float = 1.0) -> SentFrame:
    return SentFrame(
        frame_id="f",
        width=width,
        height=height,
        encoding=ImageEncoding.PNG,
        data=b"",
        display_id="d",
        source=source,
        scale_factor=scale,
        captured_at=datetime.now(UTC),
    )


RETINA = _frame(Region(-2560, -200, 2560, 1600), 1280, 800, 2.0)


@pytest.mark.parametrize(
    ("point", "expected"),
    [
        ((0, 0), (-2560, -200)),
        ((640, 400), (-1280, 600)),
        ((0.5, 0.25), (-2559, -199)),  # -2559 exactly; -199.5 rounds half up
        ((100.2, 50.7), (-2360, -99)),  # -2359.6 -> -2360, -98.6 -> -99
        ((1279, 799), (-2, 1398)),
        ((1279.9, 799.9), (-1, 1399)),  # inside the last pixel, not past it
    ],
)
def test_table_for_a_hidpi_display_with_negative_origin(
    point: tuple[float, float], expected: tuple[int, int]
) -> None:
    assert map_point(RETINA, *point, TWO_DISPLAYS) == expected


def test_odd_downscale_maps_exactly() -> None:
    # 1366x768 sent as 1024x576: one frame pixel is 1.333... physical pixels.
    frame = _frame(Region(0, 0, 1366, 768), 1024, 576)
    assert frame_to_desktop(frame, 512, 288) == (683, 384)
    assert frame_to_desktop(frame, 3, 3) == (4, 4)
    assert frame_to_desktop(frame, 1023, 575) == (1365, 767)  # 1364.67, 766.67


@pytest.mark.parametrize(
    "point",
    [(1280, 0), (0, 800), (-0.01, 5), (5, -1), (math.nan, 1), (1, math.inf), (1e9, 1e9)],
)
def test_points_off_the_frame_are_rejected(point: tuple[float, float]) -> None:
    with pytest.raises(OffScreenError, match="outside the frame"):
        map_point(RETINA, *point, TWO_DISPLAYS)


def test_point_in_a_gap_between_displays_is_rejected() -> None:
    # Whole-desktop frame of displays of different heights: the bottom right is on none.
    displays = [
        DisplayInfo("a", Region(0, 0, 1920, 1080), primary=True),
        DisplayInfo("b", Region(1920, 0, 1280, 720)),
    ]
    frame = _frame(Region(0, 0, 3200, 1080), 1600, 540)
    assert map_point(frame, 1200, 200, displays) == (2400, 400)
    with pytest.raises(OffScreenError, match=r"\(2400, 900\), which is on no display"):
        map_point(frame, 1200, 450, displays)


SCALES = st.sampled_from([1.0, 1.25, 1.5, 2.0])


@st.composite
def frames(draw: st.DrawFn) -> SentFrame:
    scale = draw(SCALES)
    width = draw(st.integers(1, 5000))
    height = draw(st.integers(1, 5000))
    source = Region(draw(st.integers(-6000, 6000)), draw(st.integers(-6000, 6000)), width, height)
    # A frame in logical points of the display, possibly shrunk again to a model box.
    shrink = draw(st.sampled_from([1.0, 0.5, 0.37, 0.8]))
    fw = max(1, round(width / scale * shrink))
    fh = max(1, round(height / scale * shrink))
    return _frame(source, fw, fh, scale)


@given(frames(), st.data())
def test_round_trip_desktop_pixel_to_frame_and_back(frame: SentFrame, data: st.DataObject) -> None:
    src = frame.source
    x = data.draw(st.integers(src.x, src.x + src.width - 1))
    y = data.draw(st.integers(src.y, src.y + src.height - 1))
    fx, fy = desktop_to_frame(frame, x, y)
    assert frame_to_desktop(frame, fx, fy) == (x, y)


@given(frames(), st.data())
def test_every_frame_point_lands_inside_the_source(frame: SentFrame, data: st.DataObject) -> None:
    fx = data.draw(st.floats(0, frame.width, exclude_max=True))
    fy = data.draw(st.floats(0, frame.height, exclude_max=True))
    x, y = frame_to_desktop(frame, fx, fy)
    assert frame.source.contains(x, y)
    # Rounded once: within half a physical pixel of the exact value (or the edge pixel).
    exact_x = frame.source.x + fx * frame.source.width / frame.width
    assert abs(x - exact_x) <= 0.5 + 1e-9 or x == frame.source.right - 1
