"""Property tests: coordinate mapping is exact; the parser only ever raises
DialectParseError, whatever the text."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from holodesk.daemon.actions import points_of
from holodesk.daemon.dialects import DialectParseError, get_dialect
from holodesk.daemon.dialects.coords import (
    CoordinateConvention,
    ImageGeometry,
    MaxBox,
    SmartResize,
    fit_in_box,
    smart_resize,
)
from holodesk.daemon.geometry import Point, Size

sizes = st.builds(Size, st.integers(1, 8000), st.integers(1, 8000))
conventions = st.sampled_from(list(CoordinateConvention))
rules = st.one_of(
    st.builds(
        SmartResize,
        factor=st.sampled_from([14, 16, 28, 32]),
        min_pixels=st.just(56 * 56),
        max_pixels=st.integers(56 * 56, 16_000_000),
    ),
    st.builds(MaxBox, st.integers(0, 4000), st.integers(0, 4000)),
)


@given(size=sizes, rule=rules, convention=conventions, fx=st.floats(0, 1), fy=st.floats(0, 1))
def test_model_to_frame_round_trips(
    size: Size, rule: SmartResize | MaxBox, convention: CoordinateConvention, fx: float, fy: float
) -> None:
    geometry = ImageGeometry.for_frame(size, rule, convention)
    ex, ey = geometry.extent
    model = Point(fx * ex, fy * ey)
    frame = geometry.to_frame(model)
    assert 0 <= frame.x <= size.width * (1 + 1e-12)
    assert 0 <= frame.y <= size.height * (1 + 1e-12)
    back = geometry.to_model(frame)
    assert math.isclose(back.x, model.x, rel_tol=1e-12, abs_tol=1e-9)
    assert math.isclose(back.y, model.y, rel_tol=1e-12, abs_tol=1e-9)


@given(size=sizes, rule=rules, convention=conventions)
def test_corners_map_to_frame_corners(
    size: Size, rule: SmartResize | MaxBox, convention: CoordinateConvention
) -> None:
    geometry = ImageGeometry.for_frame(size, rule, convention)
    ex, ey = geometry.extent
    assert geometry.to_frame(Point(0, 0)) == Point(0, 0)
    far = geometry.to_frame(Point(ex, ey))
    assert math.isclose(far.x, size.width)
    assert math.isclose(far.y, size.height)


@given(
    size=sizes,
    factor=st.sampled_from([14, 28, 32]),
    max_pixels=st.integers(4 * 56 * 56, 12_000_000),
)
def test_smart_resize_meets_its_constraints(size: Size, factor: int, max_pixels: int) -> None:
    out = smart_resize(size, factor, 56 * 56, max_pixels)
    assert out.width % factor == 0
    assert out.height % factor == 0
    assert out.width >= factor
    assert out.height >= factor
    assert out.pixels <= max_pixels
    # Applying the rule again changes nothing (an engine may resize once more).
    assert smart_resize(out, factor, 56 * 56, max_pixels) == out


def test_smart_resize_matches_known_qwen_sizes() -> None:
    assert smart_resize(Size(1920, 1080), 28, 3136, 1003520) == Size(1316, 728)
    assert smart_resize(Size(1280, 720), 28, 3136, 12845056) == Size(1288, 728)
    assert smart_resize(Size(10, 10), 28, 3136, 1003520) == Size(56, 56)


@given(size=sizes, box=st.tuples(st.integers(1, 4000), st.integers(1, 4000)))
def test_fit_in_box_keeps_inside_and_never_upscales(size: Size, box: tuple[int, int]) -> None:
    out = fit_in_box(size, *box)
    assert out.width <= max(size.width, 1)
    assert out.height <= max(size.height, 1)
    if size.width <= box[0] and size.height <= box[1]:
        assert out == size
    else:
        assert out.width <= box[0] + 1
        assert out.height <= box[1] + 1


@pytest.mark.parametrize("name", ["holo", "holo1.5"])
@given(size=sizes, fx=st.floats(0, 1), fy=st.floats(0, 1))
def test_clicks_land_where_the_model_pointed(name: str, size: Size, fx: float, fy: float) -> None:
    dialect = get_dialect(name)
    geometry = dialect.geometry(size)
    ex, ey = geometry.extent
    text = json.dumps({"thought": "", "action": {"action": "click", "x": fx * ex, "y": fy * ey}})
    (click,) = dialect.parse_step(text, geometry).actions
    (point,) = points_of(click)
    assert math.isclose(point.x, fx * size.width, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(point.y, fy * size.height, rel_tol=1e-9, abs_tol=1e-9)


GEOMETRY = get_dialect("holo").geometry(Size(1280, 720))

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(
        st.sampled_from(
            ["action", "x", "y", "keys", "key", "path", "from", "to", "content", "text",
             "direction", "amount", "seconds", "button", "count", "modifiers", "point",
             "actions", "thought", "note", "reason", "question", "url", "coordinate"]
        ) | st.text(max_size=8),
        children,
        max_size=6,
    ),
    max_leaves=20,
)  # fmt: skip
action_names = st.sampled_from(
    ["click", "click_element", "write_element_abs", "write", "scroll", "hotkey", "key", "wait",
     "answer", "double_click", "right_click", "drag", "move", "fail", "ask_user", "key_down",
     "key_up", "goto", "go_back", "triple_click", "mouse_down", "mouse_up", "type"]
)  # fmt: skip


def _action_like(name: str, fields: dict[str, Any]) -> str:
    return json.dumps({"thought": "t", "action": {"action": name, **fields}}, allow_nan=True)


def _must_parse_or_raise_typed(text: str) -> None:
    try:
        parsed = get_dialect("holo").parse_step(text, GEOMETRY)
    except DialectParseError:
        return  # the only exception allowed
    for action in parsed.actions:
        for point in points_of(action):
            assert math.isfinite(point.x)
            assert math.isfinite(point.y)
            assert 0 <= point.x <= 1280
            assert 0 <= point.y <= 720


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_parser_only_raises_parse_errors_on_any_text(text: str) -> None:
    _must_parse_or_raise_typed(text)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(action_names, st.dictionaries(st.text(max_size=10), json_values, max_size=6))
def test_parser_only_raises_parse_errors_on_adversarial_actions(
    name: str, fields: dict[str, Any]
) -> None:
    _must_parse_or_raise_typed(_action_like(name, fields))


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.text(max_size=30), st.text(max_size=30))
def test_parser_only_raises_parse_errors_on_wrapped_json(
    value: Any, before: str, after: str
) -> None:
    _must_parse_or_raise_typed(before + json.dumps(value, allow_nan=True) + after)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        '{"action": ' * 5000 + "1" + "}" * 5000,
        '{"action": {"action": "click", "x": ' + "9" * 5000 + ', "y": 1}}',
        "{" * 300_000,
        '{"action": {"action": "click", "x": [[[[[[1]]]]]], "y": 1}}',
        "<think>" + "{" * 1000,
        '{"action": {"action": "hotkey", "keys": "' + "+" * 50 + '"}}',
        '{"action": {"action": "hotkey", "keys": " "}}',
        "\x00\ud800",
    ],
)
def test_parser_survives_pathological_inputs(text: str) -> None:
    _must_parse_or_raise_typed(text)
