"""Golden scoring cases for every rule: edges in or out, concave polygons, refusals,
no answer. Targets here are built directly; the readers' conversions are tested in
test_readers.py on each benchmark's own layout."""

from __future__ import annotations

import pytest

from holodesk.data.grounding.samples import GroundingSample, ImageRef
from holodesk.data.grounding.scoring import Answer, Verdict, score
from holodesk.data.grounding.targets import Box, Polygon, Refusal, Target


def sample(target: Target) -> GroundingSample:
    return GroundingSample(
        id="s",
        image=ImageRef.inline(b"-", "test"),
        instruction="click it",
        target=target,
        width=200,
        height=120,
    )


def verdict(target: Target, answer: Answer) -> Verdict:
    return score(sample(target), answer)


INCLUSIVE = Box(20, 10, 60, 40, "inclusive")
STRICT = Box(20, 10, 60, 40, "strict")

# Each edge's midpoint and each corner of the box 20..60 x 10..40.
ON_BORDER = [
    (20, 25),  # left edge
    (60, 25),  # right edge
    (40, 10),  # top edge
    (40, 40),  # bottom edge
    (20, 10),  # corners
    (60, 10),
    (20, 40),
    (60, 40),
]
JUST_OUTSIDE = [(19.999, 25), (60.001, 25), (40, 9.999), (40, 40.001)]


@pytest.mark.parametrize(("x", "y"), ON_BORDER)
def test_inclusive_box_counts_its_border(x: float, y: float) -> None:
    assert verdict(INCLUSIVE, Answer.point(x, y)) == Verdict(True, "hit")


@pytest.mark.parametrize(("x", "y"), ON_BORDER)
def test_strict_box_misses_on_its_border(x: float, y: float) -> None:
    # GroundUI (agent-studio): left < x < right and top < y < bottom.
    assert verdict(STRICT, Answer.point(x, y)) == Verdict(False, "miss")


@pytest.mark.parametrize(("x", "y"), JUST_OUTSIDE)
def test_both_boxes_miss_just_outside(x: float, y: float) -> None:
    assert not verdict(INCLUSIVE, Answer.point(x, y)).hit
    assert not verdict(STRICT, Answer.point(x, y)).hit


def test_both_boxes_hit_inside() -> None:
    assert verdict(INCLUSIVE, Answer.point(20.001, 39.999)).hit
    assert verdict(STRICT, Answer.point(20.001, 39.999)).hit


def test_zero_height_strict_box_is_never_hit() -> None:
    # GroundUI-1K ships a few boxes like [336, 652, 466, 652]: unhittable there too.
    flat = Box(336, 652, 466, 652, "strict")
    assert not verdict(flat, Answer.point(400, 652)).hit
    assert verdict(Box(336, 652, 466, 652, "inclusive"), Answer.point(400, 652)).hit


def test_inverted_or_non_finite_box_is_refused() -> None:
    with pytest.raises(ValueError, match="inverted"):
        Box(60, 10, 20, 40)
    with pytest.raises(ValueError, match="finite"):
        Box(0, 0, float("nan"), 10)


# An L: the square 20..100 x 20..100 without its top-right quarter (x > 60, y < 60).
L_SHAPE = Polygon(((20, 20), (60, 20), (60, 60), (100, 60), (100, 100), (20, 100)))


@pytest.mark.parametrize(
    ("x", "y", "hit"),
    [
        (40, 40, True),  # the upper arm
        (80, 80, True),  # the lower arm
        (80, 40, False),  # the notch: inside the polygon's bounding box, outside the L
        (99, 21, False),  # deep in the notch
        (60, 40, True),  # on the notch's vertical edge
        (80, 60, True),  # on the notch's horizontal edge
        (60, 60, True),  # the concave vertex
        (20, 20, True),  # a convex vertex
        (20, 60, True),  # on the left edge
        (10, 60, False),  # left of it
        (100, 100.5, False),  # just below the corner
    ],
)
def test_concave_polygon(x: float, y: float, hit: bool) -> None:
    assert verdict(L_SHAPE, Answer.point(x, y)).hit is hit


def test_polygon_slanted_edge_counts_as_inside() -> None:
    triangle = Polygon(((0, 0), (30, 10), (0, 20)))
    assert verdict(triangle, Answer.point(15, 5)).hit  # on the edge (0,0)-(30,10)
    assert verdict(triangle, Answer.point(0.3, 0.1)).hit  # float point on that edge
    assert not verdict(triangle, Answer.point(15, 4.9)).hit


def test_polygon_needs_three_vertices() -> None:
    with pytest.raises(ValueError, match="at least 3"):
        Polygon(((0, 0), (1, 1)))


def test_refusal_is_hit_only_by_saying_absent() -> None:
    assert verdict(Refusal(), Answer.refusal()) == Verdict(True, "hit")
    # Any point misses, even one inside the image.
    assert verdict(Refusal(), Answer.point(100, 60)) == Verdict(False, "miss")


def test_absent_on_a_present_target_is_a_miss() -> None:
    assert verdict(INCLUSIVE, Answer.refusal()) == Verdict(False, "absent")
    assert verdict(L_SHAPE, Answer.refusal()) == Verdict(False, "absent")


@pytest.mark.parametrize("target", [INCLUSIVE, STRICT, L_SHAPE, Refusal()])
def test_no_answer_is_unparsed_and_never_a_hit(target: Target) -> None:
    # Also on a refusal: nothing usable is not the same as saying "absent".
    assert verdict(target, Answer.unparsed()) == Verdict(False, "unparsed")


def test_answers_are_one_thing_only() -> None:
    with pytest.raises(ValueError, match="both x and y"):
        Answer(x=1.0, y=None)
    with pytest.raises(ValueError, match="exactly one"):
        Answer(x=1.0, y=2.0, absent=True)
    with pytest.raises(ValueError, match="exactly one"):
        Answer(x=None, y=None)
    with pytest.raises(ValueError, match="unparsed"):
        Answer(x=1.0, y=2.0, parsed=False)
    with pytest.raises(ValueError, match="finite"):
        Answer.point(float("inf"), 2.0)
