"""Coordinates end to end, as arithmetic: model space -> frame pixels (the daemon's
dialect) -> desktop pixels (the contract's formula, which the client applies).

    desktop = source.origin + p * source.size / frame.size      (holodesk.v1.Frame)

No client code is imported (the daemon never imports it); the formula is the
contract's, so a client that follows it lands where these tests say.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from holodesk.daemon.actions import Click
from holodesk.daemon.dialects import Dialect, dialect_names, get_dialect
from holodesk.daemon.dialects.coords import (
    CoordinateConvention,
    ImageGeometry,
    MaxBox,
    NoResize,
    ResizeRule,
    SmartResize,
    TileResize,
    fit_in_box,
)
from holodesk.daemon.geometry import Point, Rect, Size

DIALECTS = dialect_names()
SCALES = (1.0, 1.25, 1.5, 2.0)


def test_every_shipped_dialect_is_covered() -> None:
    assert {"holotron", "holo", "holo1.5", "uitars", "uitars1.0"} <= set(DIALECTS)


def _unit(geometry: ImageGeometry) -> float:
    """One model unit: models answer in integers, or thousandths of 0-1."""
    return 0.001 if geometry.convention is CoordinateConvention.UNIT else 1.0


def _click_text(dialect: Dialect, x: float, y: float) -> str:
    """A click at model (x, y) written in the dialect's own syntax."""
    if dialect.spec.parser == "uitars":
        return f"Thought: t\nAction: click(start_box='({x!r},{y!r})')"
    if dialect.spec.parser == "hdesktop_json":
        call = {"tool_name": "click_desktop", "element": "e", "x": x, "y": y}
        return json.dumps({"note": None, "thought": "t", "tool_call": call})
    if dialect.spec.parser in ("nemotron_tools", "hdesktop_tools"):  # native tool calls
        space = dialect.action_space
        assert space is not None
        if dialect.spec.parser == "nemotron_tools":
            return space.write(space.form("computer.left_click"), {"coordinate": [x, y]}, "t")
        return space.write(space.form("click_desktop"), {"element": "e", "x": x, "y": y}, "t")
    assert dialect.spec.parser == "holo_json", f"no writer for parser {dialect.spec.parser}"
    return json.dumps({"thought": "t", "action": {"action": "click_element", "x": x, "y": y}})


def _parse_click(dialect: Dialect, text: str, frame: Size) -> Point:
    (click,) = dialect.parse_step(text, dialect.geometry(frame)).actions
    assert isinstance(click, Click)
    return click.point


# Any size at all, odd ones included, and the awkward few named explicitly.
frame_sizes = st.builds(Size, st.integers(1, 6000), st.integers(1, 6000))
fractions = st.floats(0, 1)
rules = st.one_of(
    st.builds(
        SmartResize,
        factor=st.sampled_from([14, 16, 28, 32]),
        min_pixels=st.just(56 * 56),
        max_pixels=st.integers(56 * 56, 16_000_000),
    ),
    st.builds(TileResize, max_tiles=st.integers(1, 16), thumbnail=st.booleans()),
    st.builds(MaxBox, st.integers(0, 4000), st.integers(0, 4000)),
    st.just(NoResize()),
)


def _round_trip(geometry: ImageGeometry, fx: float, fy: float) -> None:
    unit = _unit(geometry)
    ex, ey = geometry.extent
    # An integer model coordinate, as models answer.
    model = Point(round(fx * ex / unit) * unit, round(fy * ey / unit) * unit)
    frame = geometry.to_frame(model)
    assert 0 <= frame.x <= geometry.frame.width
    assert 0 <= frame.y <= geometry.frame.height
    # Exact: frame pixels back to model space is far within half a unit.
    back = geometry.to_model(frame)
    assert abs(back.x - model.x) <= 1e-9 * max(1.0, ex)
    assert abs(back.y - model.y) <= 1e-9 * max(1.0, ey)
    assert round(back.x / unit) * unit == pytest.approx(model.x)
    # The client rounds to whole frame pixels once; that costs at most half a frame
    # pixel, which is within half a model unit whenever the frame is as fine as the model.
    snapped = geometry.to_model(Point(round(frame.x), round(frame.y)))
    per_px_x = ex / geometry.frame.width
    per_px_y = ey / geometry.frame.height
    assert abs(snapped.x - model.x) <= max(0.5 * unit, 0.5 * per_px_x) * (1 + 1e-9)
    assert abs(snapped.y - model.y) <= max(0.5 * unit, 0.5 * per_px_y) * (1 + 1e-9)


@pytest.mark.parametrize("name", DIALECTS)
@given(frame=frame_sizes, fx=fractions, fy=fractions)
@example(frame=Size(1, 1), fx=1.0, fy=1.0)
@example(frame=Size(1919, 1079), fx=0.5, fy=0.5)
@example(frame=Size(1366, 767), fx=0.999, fy=0.001)
@example(frame=Size(3, 6000), fx=1.0, fy=0.0)
def test_every_dialect_round_trips_model_frame_model(
    name: str, frame: Size, fx: float, fy: float
) -> None:
    _round_trip(get_dialect(name).geometry(frame), fx, fy)


@given(
    frame=frame_sizes,
    rule=rules,
    convention=st.sampled_from(list(CoordinateConvention)),
    fx=fractions,
    fy=fractions,
)
def test_every_resize_rule_and_convention_round_trips(
    frame: Size, rule: ResizeRule, convention: CoordinateConvention, fx: float, fy: float
) -> None:
    _round_trip(ImageGeometry.for_frame(frame, rule, convention), fx, fy)


@pytest.mark.parametrize("name", DIALECTS)
@given(frame=frame_sizes, fx=fractions, fy=fractions)
@example(frame=Size(1920, 1080), fx=0.5, fy=0.5)
def test_a_click_written_by_the_model_lands_on_its_frame_pixel(
    name: str, frame: Size, fx: float, fy: float
) -> None:
    dialect = get_dialect(name)
    geometry = dialect.geometry(frame)
    ex, ey = geometry.extent
    x, y = round(fx * ex), round(fy * ey)
    point = _parse_click(dialect, _click_text(dialect, x, y), frame)
    assert point.x == pytest.approx(x * frame.width / ex, rel=1e-12, abs=1e-9)
    assert point.y == pytest.approx(y * frame.height / ey, rel=1e-12, abs=1e-9)


# Frames -> desktop, with HiDPI and negative origins ------------------------------------


@dataclass(frozen=True)
class Display:
    """A monitor in the virtual desktop: origin and size in physical pixels."""

    origin_x: int
    origin_y: int
    logical: Size
    scale: float

    @property
    def physical(self) -> Size:
        return Size(round(self.logical.width * self.scale), round(self.logical.height * self.scale))

    @property
    def source(self) -> Rect:
        size = self.physical
        return Rect(self.origin_x, self.origin_y, size.width, size.height)


def frame_to_desktop(p: Point, source: Rect, frame: Size) -> Point:
    """The contract's formula (holodesk.v1.Frame), as a client applies it."""
    return Point(
        source.x + p.x * source.width / frame.width,
        source.y + p.y * source.height / frame.height,
    )


LOGICAL = [
    Size(1920, 1080), Size(1536, 864), Size(1440, 900), Size(1280, 800), Size(2560, 1440),
    Size(1366, 768), Size(1080, 1920), Size(1280, 720), Size(3440, 1440), Size(1001, 667),
]  # fmt: skip
displays = st.builds(
    Display,
    origin_x=st.sampled_from([0, -1920, -2560, -3840, 1920, -1366]) | st.integers(-8000, 8000),
    origin_y=st.sampled_from([0, -1080, -300, 1080]) | st.integers(-8000, 8000),
    logical=st.sampled_from(LOGICAL) | st.builds(Size, st.integers(1, 4000), st.integers(1, 4000)),
    scale=st.sampled_from(SCALES),
)


def _frame_for(dialect: Dialect, display: Display, screen_aware: bool) -> Size:
    """The frame a client sends: the display's pixels fitted into the daemon's box."""
    physical = display.physical
    spec = dialect.frame_spec((), physical if screen_aware else None)
    return fit_in_box(physical, spec.max_width, spec.max_height)


@pytest.mark.parametrize("name", DIALECTS)
@given(display=displays, tx=fractions, ty=fractions, screen_aware=st.booleans())
@example(display=Display(-1920, -300, Size(1536, 864), 1.25), tx=0.0, ty=0.0, screen_aware=False)
@example(display=Display(-3840, 0, Size(1920, 1080), 2.0), tx=1.0, ty=1.0, screen_aware=True)
@example(display=Display(1920, -1080, Size(1280, 800), 1.5), tx=0.5, ty=0.5, screen_aware=False)
def test_model_points_land_on_the_intended_desktop_pixel(
    name: str, display: Display, tx: float, ty: float, screen_aware: bool
) -> None:
    dialect = get_dialect(name)
    source = display.source
    frame = _frame_for(dialect, display, screen_aware)
    geometry = dialect.geometry(frame)
    # The intended target: one physical pixel of this display, in desktop coordinates.
    col = min(int(tx * source.width), source.width - 1)
    row = min(int(ty * source.height), source.height - 1)
    target = (source.x + col, source.y + row)
    # Where that pixel's centre is in the frame, and in the model's space.
    centre = Point(
        (col + 0.5) * frame.width / source.width, (row + 0.5) * frame.height / source.height
    )
    model = geometry.to_model(centre)

    # A model answering with exact coordinates hits the pixel itself (±1 px).
    exact = _parse_click(dialect, _click_text(dialect, model.x, model.y), frame)
    desktop = frame_to_desktop(exact, source, frame)
    assert abs(math.floor(desktop.x) - target[0]) <= 1
    assert abs(math.floor(desktop.y) - target[1]) <= 1
    assert desktop.x == pytest.approx(target[0] + 0.5, abs=1e-6)
    assert desktop.y == pytest.approx(target[1] + 0.5, abs=1e-6)
    # In logical points (macOS-style input), the same place divided by the scale.
    assert desktop.x / display.scale == pytest.approx((target[0] + 0.5) / display.scale, abs=1e-6)

    # A model answering in whole units is off by at most half a unit, seen on the desktop.
    unit = _unit(geometry)
    ex, ey = geometry.extent
    rounded_x = min(max(round(model.x / unit) * unit, 0.0), ex)
    rounded_y = min(max(round(model.y / unit) * unit, 0.0), ey)
    whole = _parse_click(dialect, _click_text(dialect, rounded_x, rounded_y), frame)
    landed = frame_to_desktop(whole, source, frame)
    half_unit_x = 0.5 * unit * source.width / ex
    half_unit_y = 0.5 * unit * source.height / ey
    assert abs(landed.x - (target[0] + 0.5)) <= half_unit_x + 1e-6
    assert abs(landed.y - (target[1] + 0.5)) <= half_unit_y + 1e-6
    # ...and never leaves the display.
    assert source.x <= landed.x <= source.x + source.width
    assert source.y <= landed.y <= source.y + source.height


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", DIALECTS)
def test_the_last_pixel_of_a_left_display_with_a_negative_origin(name: str, scale: float) -> None:
    """The rightmost column of a display left of the primary is x = -1: the model's far
    edge must land there, not on the primary at x = 0."""
    dialect = get_dialect(name)
    display = Display(0, -200, Size(1536, 864), scale)
    width = display.physical.width
    display = Display(-width, -200, Size(1536, 864), scale)
    source = display.source
    frame = _frame_for(dialect, display, screen_aware=False)
    geometry = dialect.geometry(frame)
    centre = Point((width - 0.5) * frame.width / width, 0.5 * frame.height / source.height)
    model = geometry.to_model(centre)
    point = _parse_click(dialect, _click_text(dialect, model.x, model.y), frame)
    desktop = frame_to_desktop(point, source, frame)
    assert math.floor(desktop.x) == -1
    assert math.floor(desktop.y) == -200
