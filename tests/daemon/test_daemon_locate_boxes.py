"""Locate with boxes: the dialects' box forms, the OCR policy's text boxes, and the
Locate RPC carrying each Location's point and box (rounded outward) to the client."""

from __future__ import annotations

import io
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from holodesk.daemon.convert import box_outward
from holodesk.daemon.dialects import DialectParseError, LocatedTarget, get_dialect
from holodesk.daemon.engines.base import GenerationRequest, GenerationResult
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Box, Point, Rect, Size
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.policies.ocr.matching import find_text
from holodesk.daemon.policies.ocr.policy import OcrPolicy, OcrPolicyConfig
from holodesk.daemon.policies.ocr.reader import read_text
from holodesk.proto.v1 import agent_pb2

from .ocr.screens import form_screen
from .support import GUARD_S, make_frame, running_daemon

FRAME = Size(1280, 720)
# Model (100,200)-(300,400) in 0-1000 on a 1280x720 frame.
BOX = Box(128, 144, 384, 288)
CENTRE = Point(256, 216)

UITARS_BOXES = [
    ("parenthesised box", "(100,200,300,400)"),
    ("bracketed box", "[100,200,300,400]"),
    ("box tokens, two corners", "<|box_start|>(100,200),(300,400)<|box_end|>"),
    ("two corners, no tokens", "(100,200),(300,400)"),
    ("bbox tags", "<bbox>100 200 300 400</bbox>"),
    ("box in words", "The element is at [100,200,300,400]."),
    ("click on a box", "Thought: the OK button\nAction: click(start_box='(100,200,300,400)')"),
    (
        "click on box tokens",
        "Thought: t\nAction: click(start_box='<|box_start|>(100,200),(300,400)<|box_end|>')",
    ),
    ("drag keeps its start box", "drag(start_box='[100,200,300,400]', end_box='(900,900)')"),
]
UITARS_POINTS = [
    ("plain point", "(200,300)"),
    ("point tags", "<point>200 300</point>"),
    ("click on a point", "Thought: t\nAction: click(start_box='(200,300)')"),
    ("point tokens", "click(start_box='<|box_start|>(200,300)<|box_end|>')"),
]
UITARS_BAD = [
    ("inverted box", "(300,400,100,200)", "inverted"),
    ("inverted in a click", "Action: click(start_box='[300,200,100,400]')", "inverted"),
    ("corner outside the image", "(100,200,1300,400)", "outside the image"),
    ("nan corner", "Action: click(start_box='(nan,200,300,400)')", "nan"),
    ("three numbers", "Action: click(start_box='(1,2,3)')", "not a point or a box"),
]


@pytest.mark.parametrize(("name", "text"), UITARS_BOXES, ids=[c[0] for c in UITARS_BOXES])
def test_uitars_boxes_become_a_box_and_its_centre(name: str, text: str) -> None:
    dialect = get_dialect("uitars1.0")
    assert dialect.parse_location(text, dialect.geometry(FRAME)) == LocatedTarget(CENTRE, BOX)


@pytest.mark.parametrize(("name", "text"), UITARS_POINTS, ids=[c[0] for c in UITARS_POINTS])
def test_uitars_points_have_no_box(name: str, text: str) -> None:
    dialect = get_dialect("uitars1.0")
    target = dialect.parse_location(text, dialect.geometry(FRAME))
    assert target == LocatedTarget(Point(256, 216))
    assert target.box is None


@pytest.mark.parametrize(("name", "text", "message"), UITARS_BAD, ids=[c[0] for c in UITARS_BAD])
def test_uitars_bad_boxes_are_parse_errors(name: str, text: str, message: str) -> None:
    dialect = get_dialect("uitars1.0")
    with pytest.raises(DialectParseError, match=message) as caught:
        dialect.parse_location(text, dialect.geometry(FRAME))
    assert caught.value.hint


def test_uitars_resized_pixel_boxes_map_like_points() -> None:
    dialect = get_dialect("uitars")
    geometry = dialect.geometry(Size(1920, 1080))
    target = dialect.parse_location("[280,140,560,420]", geometry)
    first = geometry.to_frame(Point(280, 140))
    second = geometry.to_frame(Point(560, 420))
    assert target.box == Box(first.x, first.y, second.x, second.y)
    assert target.point == Point((first.x + second.x) / 2, (first.y + second.y) / 2)


HOLO_BOXES = [
    ("box beside x/y", {"x": 200, "y": 300, "box": [100, 200, 300, 400]}, Point(256, 216)),
    ("bbox beside x/y", {"x": 100, "y": 400, "bbox": [100, 200, 300, 400]}, Point(128, 288)),
    ("a box alone means its centre", {"bbox": [100, 200, 300, 400]}, CENTRE),
    ("corner pairs", {"x": 200, "y": 300, "box": [[100, 200], [300, 400]]}, Point(256, 216)),
    (
        "flat click with a box",
        {"action": "click", "x": 200, "y": 300, "box": [100, 200, 300, 400]},
        Point(256, 216),
    ),
]
HOLO_BAD = [
    ("point outside its box", '{"x": 500, "y": 300, "box": [100, 200, 300, 400]}', "outside"),
    ("inverted box", '{"box": [300, 400, 100, 200]}', "inverted"),
    ("three numbers", '{"x": 1, "y": 1, "box": [100, 200, 300]}', "not a box"),
    ("corner outside the image", '{"box": [100, 200, 300, 1200]}', "outside the image"),
    ("NaN corner", '{"box": [NaN, 200, 300, 400]}', "nan"),
    ("text corner", '{"box": ["a", 200, 300, 400]}', "not a number"),
]


@pytest.mark.parametrize(("name", "answer", "point"), HOLO_BOXES, ids=[c[0] for c in HOLO_BOXES])
def test_holo_box_fields_become_a_box(name: str, answer: dict[str, object], point: Point) -> None:
    dialect = get_dialect("holo")
    target = dialect.parse_location(json.dumps(answer), dialect.geometry(FRAME))
    assert target == LocatedTarget(point, BOX)


@pytest.mark.parametrize("text", ['{"x": 200, "y": 300}', "Click(200, 300)"])
def test_holo_point_answers_have_no_box(text: str) -> None:
    dialect = get_dialect("holo")
    assert dialect.parse_location(text, dialect.geometry(FRAME)) == LocatedTarget(Point(256, 216))


@pytest.mark.parametrize(("name", "text", "message"), HOLO_BAD, ids=[c[0] for c in HOLO_BAD])
def test_holo_bad_boxes_are_parse_errors(name: str, text: str, message: str) -> None:
    dialect = get_dialect("holo")
    with pytest.raises(DialectParseError, match=message) as caught:
        dialect.parse_location(text, dialect.geometry(FRAME))
    assert caught.value.hint


# Property: whatever box text a model writes, a returned box is inside the frame and
# contains the returned point; anything else is a typed parse error.

coords = st.one_of(
    st.integers(-50, 1100),
    st.floats(-10, 1100, allow_nan=False),
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, 1.0, 1000.0]),
)
UITARS_FORMS = [
    "({0},{1},{2},{3})",
    "[{0},{1},{2},{3}]",
    "<|box_start|>({0},{1}),({2},{3})<|box_end|>",
    "<bbox>{0} {1} {2} {3}</bbox>",
    "Thought: t\nAction: click(start_box='({0},{1},{2},{3})')",
]


def _assert_sound(target: LocatedTarget, frame: Size) -> None:
    point = target.point
    assert math.isfinite(point.x)
    assert math.isfinite(point.y)
    assert 0 <= point.x <= frame.width
    assert 0 <= point.y <= frame.height
    if target.box is not None:
        box = target.box
        assert 0 <= box.left <= box.right <= frame.width
        assert 0 <= box.top <= box.bottom <= frame.height
        assert box.contains(point)


@settings(max_examples=300, deadline=None)
@given(
    dialect=st.sampled_from(["holo", "holo1.5", "uitars", "uitars1.0"]),
    frame=st.builds(Size, st.integers(1, 3000), st.integers(1, 3000)),
    corners=st.tuples(coords, coords, coords, coords),
    point=st.none() | st.tuples(coords, coords),
    form=st.integers(0, len(UITARS_FORMS) - 1),
    ordered=st.booleans(),
)
def test_any_returned_box_is_in_the_frame_and_contains_its_point(
    dialect: str,
    frame: Size,
    corners: tuple[float, float, float, float],
    point: tuple[float, float] | None,
    form: int,
    ordered: bool,
) -> None:
    chosen = get_dialect(dialect)
    if ordered:  # half the boxes have their corners in order, so most of those parse
        (x1, x2), (y1, y2) = sorted(corners[::2]), sorted(corners[1::2])
        corners = (x1, y1, x2, y2)
    if dialect.startswith("holo"):
        answer: dict[str, object] = {"box": list(corners)}
        if point is not None:
            answer.update(x=point[0], y=point[1])
        text = json.dumps(answer)
    else:
        text = UITARS_FORMS[form].format(*corners)
    target: LocatedTarget | None = None
    error: DialectParseError | None = None
    try:
        target = chosen.parse_location(text, chosen.geometry(frame))
    except DialectParseError as exc:
        error = exc
    if target is None:  # a parse error that explains itself and says how to fix it
        assert error is not None
        assert error.message
        assert error.hint
        return
    _assert_sound(target, frame)


@pytest.mark.parametrize(
    ("box", "rect"),
    [
        (Box(128, 144, 384, 288), Rect(128, 144, 256, 144)),
        (Box(129.28, 146.16, 382.72, 288.72), Rect(129, 146, 254, 143)),
        (Box(0.5, 0.5, 0.5, 0.5), Rect(0, 0, 1, 1)),
        (Box(3, 4, 3, 4), Rect(3, 4, 0, 0)),
    ],
)
def test_boxes_round_outward_to_whole_pixels(box: Box, rect: Rect) -> None:
    assert box_outward(box) == rect


# The OCR policy: the matched text's own box.


async def test_ocr_locate_returns_the_matched_texts_box() -> None:
    policy = OcrPolicy(OcrPolicyConfig(max_concurrent=1))
    await policy.start()
    screen = form_screen()
    data = screen.png()
    with Image.open(io.BytesIO(data)) as opened:
        image = opened.convert("RGB")
    frame = EncodedFrame("f", Size(*image.size), ImageEncoding.PNG, data)
    descriptions = ("OK", "Email address", "no such words here")
    ok, email, missing = await policy.locate(frame, descriptions)
    words = read_text(image, policy.config.reader)
    for location in (ok, email):
        match = find_text(location.description, words, policy.config.planner.match_threshold)
        assert match is not None
        assert location.found
        assert location.box == Box(*match.box)
        assert location.point is not None
        _assert_sound(LocatedTarget(location.point, location.box), frame.size)
    assert not missing.found
    assert missing.box is None


# The Locate RPC: several descriptions in one request, each answered by the model.


class ByDescriptionEngine(ScriptedEngine):
    """Answers each Locate conversation by the description in its prompt."""

    def __init__(self, answers: dict[str, str]) -> None:
        super().__init__(())
        self.answers = answers

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        await super().generate(request)  # the script's checks and bookkeeping
        prompt = request.messages[-1].text
        for description, answer in self.answers.items():
            if description in prompt:
                return GenerationResult(text=answer)
        return GenerationResult(text="I cannot find it.")


LOCATE_ANSWERS = {
    "uitars1.0": {
        "the OK button": "<|box_start|>(101,203),(299,401)<|box_end|>",
        "the logo": "(500,500)",
        "the search field": "Action: click(start_box='[0,0,1000,1000]')",
    },
    "holo": {
        "the OK button": '{"x": 200, "y": 300, "box": [101, 203, 299, 401]}',
        "the logo": '{"x": 500, "y": 500}',
        "the search field": '{"bbox": [0, 0, 1000, 1000]}',
    },
}


@pytest.mark.parametrize("dialect", sorted(LOCATE_ANSWERS))
async def test_locate_rpc_returns_each_point_and_box(dialect: str) -> None:
    engine = ByDescriptionEngine(LOCATE_ANSWERS[dialect])
    policy = ModelPolicy(get_dialect(dialect), engine, name="boxes")
    descriptions = ["the OK button", "the logo", "the search field", "a unicorn"]
    async with running_daemon([policy]) as daemon:
        request = agent_pb2.LocateRequest(
            frame=make_frame("l", FRAME.width, FRAME.height), descriptions=descriptions
        )
        response = await daemon.agent.Locate(request, timeout=GUARD_S)
    ok, logo, search, unicorn = response.locations
    assert [loc.description for loc in response.locations] == descriptions

    # (101,203)-(299,401) of 0-1000 is (129.28,146.16)-(382.72,288.72): rounded outward.
    assert ok.found
    assert ok.HasField("box")
    assert (ok.box.x, ok.box.y, ok.box.width, ok.box.height) == (129, 146, 254, 143)
    expected_point = (256.0, 216.0) if dialect == "holo" else (256.0, 217.44)
    assert (ok.point.x, ok.point.y) == pytest.approx(expected_point)

    assert logo.found
    assert logo.HasField("point")
    assert not logo.HasField("box")
    assert (logo.point.x, logo.point.y) == (640.0, 360.0)

    assert search.found
    assert (search.box.x, search.box.y, search.box.width, search.box.height) == (0, 0, 1280, 720)
    assert (search.point.x, search.point.y) == (640.0, 360.0)

    assert not unicorn.found
    assert not unicorn.HasField("point")
    assert not unicorn.HasField("box")
    assert unicorn.raw_output == "I cannot find it."
