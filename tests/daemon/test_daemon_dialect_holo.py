"""The holo dialect on real Holo-format outputs: table tests, frame-pixel results."""

from __future__ import annotations

import json
from typing import Any

import pytest

from holodesk.daemon.actions import (
    ActionKind,
    AskUser,
    Click,
    Done,
    Drag,
    Fail,
    KeyChord,
    KeyDown,
    KeyUp,
    Modifier,
    MouseButton,
    Move,
    Navigate,
    Scroll,
    TypeText,
    Wait,
)
from holodesk.daemon.dialects import DialectParseError, get_dialect
from holodesk.daemon.geometry import Point, Size

HOLO = get_dialect("holo")
FRAME = Size(1000, 500)  # normalized 0-1000: x maps 1:1, y halves
GEO = HOLO.geometry(FRAME)


def step(action: dict[str, Any], **extra: Any) -> str:
    return json.dumps({"note": "", "thought": "t", "action": action, **extra})


CASES: list[tuple[str, str, tuple[ActionKind, ...]]] = [
    (
        "cookbook click_element",
        step({"action": "click_element", "element": "Search button", "x": 412, "y": 88}),
        (Click(Point(412, 44)),),
    ),
    (
        "cookbook write_element_abs clicks then types",
        step({"action": "write_element_abs", "content": "Paris", "element": "b", "x": 10, "y": 20}),
        (Click(Point(10, 10)), TypeText("Paris")),
    ),
    ("write without a point types at the focus", step({"action": "write", "text": "hi"}),
     (TypeText("hi"),)),
    ("scroll down at the centre", step({"action": "scroll", "direction": "down"}),
     (Scroll(Point(500, 250), dx=0, dy=5),)),
    (
        "scroll left at a point with an amount",
        step({"action": "scroll", "direction": "left", "x": 100, "y": 100, "amount": 2}),
        (Scroll(Point(100, 50), dx=-2, dy=0),),
    ),
    ("hotkey as a list", step({"action": "hotkey", "keys": ["Control", "Shift", "T"]}),
     (KeyChord(("ctrl", "shift", "t")),)),
    ("key as a chord string", step({"action": "key", "keys": "cmd+Return"}),
     (KeyChord(("meta", "enter")),)),
    ("a plus key", step({"action": "hotkey", "keys": "ctrl++"}), (KeyChord(("ctrl", "+")),)),
    ("wait", step({"action": "wait", "seconds": 3}), (Wait(3000),)),
    ("wait is capped", step({"action": "wait", "seconds": 3600}), (Wait(30000),)),
    ("answer", step({"action": "answer", "content": "42 °C"}), (Done("42 °C"),)),
    ("double_click", step({"action": "double_click", "x": 1, "y": 2}),
     (Click(Point(1, 1), count=2),)),
    ("right_click", step({"action": "right_click", "x": 0, "y": 0}),
     (Click(Point(0, 0), button=MouseButton.RIGHT),)),
    ("a side button", step({"action": "click", "x": 8, "y": 8, "button": "Back"}),
     (Click(Point(8, 4), button=MouseButton.BACK),)),
    (
        "click with modifiers",
        step({"action": "click", "x": 1000, "y": 1000, "modifiers": ["shift", "ctrl"]}),
        (Click(Point(1000, 500), modifiers=(Modifier.SHIFT, Modifier.CTRL)),),
    ),
    ("move / hover", step({"action": "hover", "x": 500, "y": 500}), (Move(Point(500, 250)),)),
    (
        "drag from/to",
        step({"action": "drag", "from": [0, 0], "to": {"x": 100, "y": 200}}),
        (Drag((Point(0, 0), Point(100, 100))),),
    ),
    (
        "drag along a path",
        step({"action": "drag", "path": [[0, 0], [10, 10], [20, 40]]}),
        (Drag((Point(0, 0), Point(10, 5), Point(20, 20))),),
    ),
    ("fail", step({"action": "fail", "reason": "captcha"}), (Fail("captcha"),)),
    ("ask_user", step({"action": "ask_user", "question": "Which one?"}), (AskUser("Which one?"),)),
    ("key_down / key_up", step({"action": "key_down", "key": "Shift"}), (KeyDown("shift"),)),
    ("key_up", step({"action": "key_up", "key": "a"}), (KeyUp("a"),)),
    ("go_back", step({"action": "go_back"}), (KeyChord(("alt", "left")),)),
    (
        "goto",
        step({"action": "goto", "url": "https://example.org"}),
        (Navigate("https://example.org"),),
    ),
    (
        "reasoning before the JSON (Holo2 thinks first)",
        "<think>The button is top left.</think>\n"
        + step({"action": "click_element", "element": "b", "x": 20, "y": 40}),
        (Click(Point(20, 20)),),
    ),
    (
        "fenced JSON after prose",
        "Here it is:\n```json\n" + step({"action": "answer", "content": "x"}) + "\n```",
        (Done("x"),),
    ),
    (
        "JSON embedded in prose",
        "I will click. " + step({"action": "click", "x": "250", "y": 500.5}) + " Done.",
        (Click(Point(250, 250.25)),),
    ),
    (
        "flat localization form",
        json.dumps({"action": "click", "x": 300, "y": 300}),
        (Click(Point(300, 150)),),
    ),
    (
        "several actions in one step",
        json.dumps({"thought": "t", "actions": [
            {"action": "click", "x": 10, "y": 10}, {"action": "answer", "content": "ok"}
        ]}),
        (Click(Point(10, 5)), Done("ok")),
    ),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_holo_outputs_become_frame_pixel_actions(
    text: str, expected: tuple[ActionKind, ...]
) -> None:
    assert HOLO.parse_step(text, GEO).actions == expected


def test_thought_and_note_are_kept() -> None:
    text = json.dumps(
        {"note": "price is 12€", "thought": "scroll for more", "action": {"action": "scroll"}}
    )
    parsed = HOLO.parse_step(text, GEO)
    assert (parsed.thought, parsed.note) == ("scroll for more", "price is 12€")


BAD: list[tuple[str, str]] = [
    ("", "empty"),
    ("no json here", "no JSON object"),
    ('{"thought": "x"}', "no action field"),
    (step({"action": "teleport"}), "unknown action 'teleport'"),
    (step({"action": "click", "x": 1001, "y": 5}), "outside the image"),
    (step({"action": "click", "x": -1, "y": 5}), "outside the image"),
    ('{"action": {"action": "click", "x": NaN, "y": 5}}', "x is nan"),
    ('{"action": {"action": "click", "x": 5, "y": Infinity}}', "y is inf"),
    (step({"action": "click", "x": "1e999", "y": 5}), "x is inf"),
    (step({"action": "click", "x": True, "y": 5}), "boolean"),
    (step({"action": "click", "x": 5}), "both x and y"),
    (step({"action": "click"}), "needs a point"),
    (step({"action": "hotkey", "keys": ["ctrl", "hyper"]}), "unknown key 'hyper'"),
    (step({"action": "scroll", "direction": "sideways"}), "direction"),
    (step({"action": "wait", "seconds": -2}), "seconds is -2"),
    (step({"action": "drag", "path": [[1, 1]]}), "path"),
    (step({"action": "write", "x": 3, "y": 3}), "missing field 'content'"),
    (
        json.dumps({"actions": [{"action": "answer", "content": "a"}, {"action": "wait"}]}),
        "follows a terminal action",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[b[1] for b in BAD])
def test_unusable_outputs_are_typed_parse_errors_with_a_hint(text: str, message: str) -> None:
    with pytest.raises(DialectParseError) as caught:
        HOLO.parse_step(text, GEO)
    assert message in caught.value.message
    assert caught.value.hint


def test_holo15_uses_pixels_of_the_resized_image() -> None:
    dialect = get_dialect("holo1.5")
    frame = Size(1920, 1080)
    geometry = dialect.geometry(frame)
    # Qwen2.5-VL's smart resize of 1920x1080 under 1280*28*28 pixels.
    assert geometry.model_image == Size(1316, 728)
    parsed = dialect.parse_step(step({"action": "click", "x": 658, "y": 364}), geometry)
    assert parsed.actions == (Click(Point(960.0, 540.0)),)
    with pytest.raises(DialectParseError, match="outside the image"):
        dialect.parse_step(step({"action": "click", "x": 1317, "y": 1}), geometry)


def test_locations_accept_json_points_and_click_text() -> None:
    assert HOLO.parse_location('{"x": 500, "y": 500}', GEO).point == Point(500, 250)
    holo15 = get_dialect("holo1.5")
    geometry = holo15.geometry(Size(1920, 1080))  # the model saw 1316x728
    assert holo15.parse_location("Click(329, 182)", geometry).point == Point(480, 270)
    with pytest.raises(DialectParseError):
        HOLO.parse_location("nowhere", GEO)


def test_the_schema_constrains_coordinates_per_convention() -> None:
    schema = HOLO.step_schema()
    assert schema is not None
    (click,) = (v for v in schema["properties"]["action"]["anyOf"] if v["title"] == "click_element")
    assert click["properties"]["x"]["maximum"] == 1000
    assert click["properties"]["x"]["type"] == "integer"
    holo15 = get_dialect("holo1.5")
    pixels = holo15.step_schema()
    assert pixels is not None
    (px,) = (v for v in pixels["properties"]["action"]["anyOf"] if v["title"] == "click_element")
    assert "maximum" not in px["properties"]["x"]
    # Given the step's geometry, pixels are bounded by the image the model sees.
    geometry = holo15.geometry(Size(1920, 1080))  # the model sees 1316x728
    bounded = holo15.step_schema(geometry)
    assert bounded is not None
    (bx,) = (v for v in bounded["properties"]["action"]["anyOf"] if v["title"] == "click_element")
    assert (bx["properties"]["x"]["maximum"], bx["properties"]["y"]["maximum"]) == (1316, 728)
    assert set(schema["required"]) == {"thought", "action"}
