"""The uitars dialects on real UI-TARS-format outputs: table tests, frame-pixel results,
escapes, box forms, the conversation it builds, and what it rejects."""

from __future__ import annotations

import pytest

from holodesk.daemon.actions import (
    Action,
    ActionKind,
    ActionResult,
    ActionStatus,
    AskUser,
    Click,
    Done,
    Drag,
    Fail,
    HistoryStep,
    KeyChord,
    KeyDown,
    KeyUp,
    MouseButton,
    MouseDown,
    MouseUp,
    Move,
    Scroll,
    TypeText,
    Wait,
)
from holodesk.daemon.dialects import DialectParseError, get_dialect
from holodesk.daemon.engines.base import ImagePart
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Point, Size
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.steps import StepContext
from tests.daemon.support import image_bytes

UITARS = get_dialect("uitars")
# 1932x1092 is its own smart resize (multiples of 28, within bounds): model pixels are
# frame pixels, so the expected values read directly.
FRAME = Size(1932, 1092)
GEO = UITARS.geometry(FRAME)
UITARS10 = get_dialect("uitars1.0")
GEO10 = UITARS10.geometry(Size(1000, 500))  # relative 0-1000: x 1:1, y halves


def test_the_geometry_used_by_the_table() -> None:
    assert GEO.model_image == FRAME
    assert get_dialect("uitars").geometry(Size(1920, 1080)).model_image == Size(1932, 1092)


CASES: list[tuple[str, str, tuple[ActionKind, ...]]] = [
    (
        "UI-TARS-1.5 click with box tokens",
        "Thought: To open the File menu I need to click \"File\" in the menu bar at the top "
        "left.\nAction: click(start_box='<|box_start|>(23,12)<|box_end|>')",
        (Click(Point(23, 12)),),
    ),
    ("plain (x,y)", "Thought: Click OK.\nAction: click(start_box='(966,546)')",
     (Click(Point(966, 546)),)),
    ("a box means its centre", "Thought: b\nAction: click(start_box='[100,100,200,150]')",
     (Click(Point(150, 125)),)),
    ("a box in parentheses", "Thought: b\nAction: click(start_box='(100,100,200,150)')",
     (Click(Point(150, 125)),)),
    ("two points as a box", "Thought: b\nAction: click(start_box='(100,100)(200,150)')",
     (Click(Point(150, 125)),)),
    ("computer-use <point> form", "Thought: p\nAction: click(point='<point>510 150</point>')",
     (Click(Point(510, 150)),)),
    ("<bbox> form", "Thought: p\nAction: click(start_box='<bbox>10 20 30 40</bbox>')",
     (Click(Point(20, 30)),)),
    ("left_double", "Thought: open it\nAction: left_double(start_box='(300,400)')",
     (Click(Point(300, 400), count=2),)),
    ("right_single", "Thought: menu\nAction: right_single(start_box='(5,6)')",
     (Click(Point(5, 6), button=MouseButton.RIGHT),)),
    ("left_single alias", "Thought: t\nAction: left_single(start_box='(1,2)')",
     (Click(Point(1, 2)),)),
    (
        "drag",
        "Thought: move the slider\nAction: drag(start_box='(100,200)', end_box='(300,200)')",
        (Drag((Point(100, 200), Point(300, 200))),),
    ),
    (
        "drag with computer-use point names",
        "Thought: d\nAction: "
        "drag(start_point='<point>1 2</point>', end_point='<point>3 4</point>')",
        (Drag((Point(1, 2), Point(3, 4))),),
    ),
    ("select is a drag", "Thought: s\nAction: select(start_box='(0,0)', end_box='(10,10)')",
     (Drag((Point(0, 0), Point(10, 10))),)),
    ("hotkey, space separated", "Thought: copy\nAction: hotkey(key='ctrl c')",
     (KeyChord(("ctrl", "c")),)),
    ("hotkey, three keys", "Thought: reopen\nAction: hotkey(key='ctrl shift t')",
     (KeyChord(("ctrl", "shift", "t")),)),
    ("hotkey arrow names", "Thought: k\nAction: hotkey(key='arrowleft')", (KeyChord(("left",)),)),
    ("hotkey space", "Thought: k\nAction: hotkey(key='space')", (KeyChord(("space",)),)),
    ("press (computer use)", "Thought: k\nAction: press(key='enter')", (KeyChord(("enter",)),)),
    ("keydown", "Thought: k\nAction: keydown(key='shift')", (KeyDown("shift"),)),
    ("keyup", "Thought: k\nAction: keyup(key='Shift')", (KeyUp("shift"),)),
    ("release is keyup", "Thought: k\nAction: release(key='ctrl')", (KeyUp("ctrl"),)),
    ("type", "Thought: t\nAction: type(content='hello world')", (TypeText("hello world"),)),
    (
        "type with \\n at the end submits",
        "Thought: search\nAction: type(content='weather in Paris\\n')",
        (TypeText("weather in Paris"), KeyChord(("enter",))),
    ),
    (
        "escaped quotes, as the prompt asks",
        "Thought: t\nAction: type(content='It\\'s \\\"quoted\\\"')",
        (TypeText('It\'s "quoted"'),),
    ),
    ("an unescaped apostrophe", "Thought: t\nAction: type(content='It's here')",
     (TypeText("It's here"),)),
    ("quotes and parentheses inside", "Thought: t\nAction: type(content='f(x') = 'y'')",
     (TypeText("f(x') = 'y'"),)),
    ("double-quoted value", 'Thought: t\nAction: type(content="say \\"hi\\"")',
     (TypeText('say "hi"'),)),
    ("\\n inside: a line break", "Thought: t\nAction: type(content='line 1\\nline 2')",
     (TypeText("line 1\nline 2"),)),
    ("a real line break inside", "Thought: t\nAction: type(content='line 1\nline 2')",
     (TypeText("line 1\nline 2"),)),
    ("a backslash kept", "Thought: t\nAction: type(content='C:\\\\Users\\\\me')",
     (TypeText("C:\\Users\\me"),)),
    ("unknown escapes stay", "Thought: t\nAction: type(content='C:\\dir')",
     (TypeText("C:\\dir"),)),
    ("unicode escape and text", "Thought: t\nAction: type(content='caf\\u00e9 日本')",
     (TypeText("café 日本"),)),
    ("only \\n presses Enter", "Thought: t\nAction: type(content='\\n')", (KeyChord(("enter",)),)),
    (
        "scroll at a point",
        "Thought: more results below\nAction: scroll(start_box='(966,600)', direction='down')",
        (Scroll(Point(966, 600), dy=5),),
    ),
    ("scroll without a point: the centre", "Thought: s\nAction: scroll(direction='up')",
     (Scroll(Point(966, 546), dy=-5),)),
    ("scroll left", "Thought: s\nAction: scroll(start_box='(1,1)', direction='left')",
     (Scroll(Point(1, 1), dx=-5),)),
    ("wait is 5 s", "Thought: loading\nAction: wait()", (Wait(5000),)),
    (
        "finished with an escaped answer",
        "Thought: done\nAction: finished(content='The cheapest flight is \\'$129\\'.')",
        (Done("The cheapest flight is '$129'."),),
    ),
    ("finished without content", "Thought: done\nAction: finished()", (Done(""),)),
    (
        "call_user asks with the thought",
        "Thought: A login is required; only the user knows the password.\nAction: call_user()",
        (AskUser("A login is required; only the user knows the password."),),
    ),
    ("fail (an extension)", "Thought: blocked\nAction: fail(reason='captcha')",
     (Fail("captcha"),)),
    ("hover", "Thought: h\nAction: hover(start_box='(7,8)')", (Move(Point(7, 8)),)),
    ("move_to", "Thought: h\nAction: move_to(start_box='(7,8)')", (Move(Point(7, 8)),)),
    (
        "mouse_down / mouse_up",
        "Thought: m\nAction: mouse_down(start_box='(1,1)', button='left')\n\n"
        "mouse_up(start_box='(9,9)', button='left')",
        (MouseDown(MouseButton.LEFT, Point(1, 1)), MouseUp(MouseButton.LEFT, Point(9, 9))),
    ),
    (
        "several actions, blank-line separated",
        "Thought: fill in the name and submit\nAction: click(start_box='(120,45)')\n\n"
        "type(content='Ada Lovelace')\n\nhotkey(key='enter')",
        (Click(Point(120, 45)), TypeText("Ada Lovelace"), KeyChord(("enter",))),
    ),
    (
        "Reflection / Action_Summary",
        "Reflection: The last click missed.\nAction_Summary: Click Save.\n"
        "Action: click(start_box='(10,10)')",
        (Click(Point(10, 10)),),
    ),
    ("full-width colon", "Thought: 点击保存按钮\nAction：click(start_box='(10,10)')",
     (Click(Point(10, 10)),)),
    ("action on the next line", "Thought: t\nAction:\nclick(start_box='(10,10)')",
     (Click(Point(10, 10)),)),
    ("a bare call", "click(start_box='(10,10)')", (Click(Point(10, 10)),)),
    ("unquoted box", "Thought: t\nAction: click(start_box=(10,10))", (Click(Point(10, 10)),)),
    ("positional argument", "Thought: t\nAction: click('(10,10)')", (Click(Point(10, 10)),)),
    (
        "'Action:' inside the thought is not the action",
        "Thought: The previous Action: click(start_box='(1,1)') missed.\n"
        "Action: click(start_box='(20,20)')",
        (Click(Point(20, 20)),),
    ),
    (
        "'Action:' inside typed text is not the action",
        "Thought: t\nAction: type(content='Action: click(start_box=\\'(1,1)\\')')",
        (TypeText("Action: click(start_box='(1,1)')"),),
    ),
    (
        "reasoning in think tags",
        "<think>the field is empty</think>Thought: t\nAction: click(start_box='(3,4)')",
        (Click(Point(3, 4)),),
    ),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_uitars_outputs_become_frame_pixel_actions(
    text: str, expected: tuple[ActionKind, ...]
) -> None:
    assert UITARS.parse_step(text, GEO).actions == expected


def test_thought_and_reflection_are_kept() -> None:
    parsed = UITARS.parse_step(
        "Thought: The Save button is at the top right.\nAction: click(start_box='(1,1)')", GEO
    )
    assert parsed.thought == "The Save button is at the top right."
    reflected = UITARS.parse_step(
        "Reflection: It failed.\nAction_Summary: Retry.\nAction: wait()", GEO
    )
    assert (reflected.thought, reflected.note) == ("Retry.", "It failed.")


def test_uitars15_pixels_follow_the_smart_resize() -> None:
    frame = Size(1920, 1080)  # the model saw 1932x1092
    geometry = UITARS.geometry(frame)
    parsed = UITARS.parse_step("Thought: t\nAction: click(start_box='(966,546)')", geometry)
    assert parsed.actions == (Click(Point(960, 540)),)
    with pytest.raises(DialectParseError, match="outside the image"):
        UITARS.parse_step("Thought: t\nAction: click(start_box='(1933,10)')", geometry)


def test_uitars10_is_relative_0_to_1000() -> None:
    parsed = UITARS10.parse_step("Thought: t\nAction: click(start_box='(250,500)')", GEO10)
    assert parsed.actions == (Click(Point(250, 250)),)
    box = UITARS10.parse_step("Thought: t\nAction: click(start_box='(0,0,1000,1000)')", GEO10)
    assert box.actions == (Click(Point(500, 250)),)
    with pytest.raises(DialectParseError, match="outside the image"):
        UITARS10.parse_step("Thought: t\nAction: click(start_box='(1001,5)')", GEO10)


BAD: list[tuple[str, str]] = [
    ("", "empty"),
    ("Thought: I should click the button.", "no Action: line"),
    ("Thought: t\nAction: the OK button", "no function call"),
    ("Thought: t\nAction: teleport(start_box='(1,1)')", "unknown action 'teleport'"),
    ("Thought: t\nAction: open_app(app_name='Chrome')", "unknown action 'open_app'"),
    ("Thought: t\nAction: click()", "needs a position"),
    ("Thought: t\nAction: click(start_box='(2000,10)')", "outside the image"),
    ("Thought: t\nAction: click(start_box='(-5,10)')", "outside the image"),
    ("Thought: t\nAction: click(start_box='(nan,10)')", "start_box is nan"),
    ("Thought: t\nAction: click(start_box='(1e999,10)')", "start_box is inf"),
    ("Thought: t\nAction: click(start_box='(1,2,3)')", "not a point or a box"),
    ("Thought: t\nAction: click(start_box='the button')", "not a point or a box"),
    ("Thought: t\nAction: click(start_box='(1,2)', start_box='(3,4)')", "twice"),
    ("Thought: t\nAction: click(start_box='(1,2)') and then I am done", "unexpected text"),
    ("Thought: t\nAction: click(start_box='(1,2)'", "not closed"),
    ("Thought: t\nAction: type(content='unterminated)", "not closed"),
    ("Thought: t\nAction: type(content='')", "no content"),
    ("Thought: t\nAction: drag(start_box='(1,1)')", "needs start_box and end_box"),
    ("Thought: t\nAction: scroll(direction='down or up or right or left')", "direction"),
    ("Thought: t\nAction: hotkey(key='ctrl hyper')", "unknown key 'hyper'"),
    ("Thought: t\nAction: hotkey()", "no key"),
    ("Thought: t\nAction: wait(seconds='-2')", "seconds is -2"),
    ("Thought: t\nAction: click(start_box='(1,1)', button='back')", "button"),
    (
        "Thought: t\nAction: finished(content='x')\n\nclick(start_box='(1,1)')",
        "follows a terminal action",
    ),
    ("Thought: t\nAction: " + "\n\n".join(["wait()"] * 17), "more than 16 actions"),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[b[1] for b in BAD])
def test_unusable_outputs_are_typed_parse_errors_with_a_hint(text: str, message: str) -> None:
    with pytest.raises(DialectParseError) as caught:
        UITARS.parse_step(text, GEO)
    assert message in caught.value.message
    assert caught.value.hint


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(966,546)", Point(966, 546)),
        ("click(start_box='<|box_start|>(10,20)<|box_end|>')", Point(10, 20)),
        ("Thought: it is the blue button\nAction: click(start_box='(30,40)')", Point(30, 40)),
        ("The element is at [0,0,100,50].", Point(50, 25)),
        ("<point>12 34</point>", Point(12, 34)),
    ],
)
def test_locations_accept_every_position_form(text: str, expected: Point) -> None:
    assert UITARS.parse_location(text, GEO).point == expected


def test_locations_without_a_position_are_parse_errors() -> None:
    with pytest.raises(DialectParseError, match="no position"):
        UITARS.parse_location("I cannot find it.", GEO)
    with pytest.raises(DialectParseError, match="no position"):
        UITARS.parse_location("Thought: t\nAction: wait()", GEO)
    with pytest.raises(DialectParseError, match="outside the image"):
        UITARS.parse_location("(5000,5000)", GEO)


def test_free_text_has_no_schema() -> None:
    assert UITARS.parser.step_schema(UITARS.spec) is None
    assert UITARS.step_schema() is None
    assert UITARS.location_schema() is None
    assert UITARS.spec.structured_output is False


# The conversation --------------------------------------------------------------------


def _image(tag: int) -> ImagePart:
    return ImagePart(bytes([tag]), "image/png", FRAME.width, FRAME.height)


def _frames(*steps: int) -> tuple[EncodedFrame, ...]:
    return tuple(EncodedFrame(f"f{n}", FRAME, ImageEncoding.PNG) for n in steps)


def _step(number: int, thought: str, *kinds: ActionKind) -> HistoryStep:
    actions = tuple(Action(f"a{number}-{i}", f"f{number}", k) for i, k in enumerate(kinds))
    results = tuple(ActionResult(a.action_id, ActionStatus.OK) for a in actions)
    return HistoryStep(number, actions, thought=thought, results=results, frame_size=FRAME)


def test_history_is_replayed_as_the_models_own_turns() -> None:
    history = (
        _step(1, "Open the menu.", Click(Point(23, 12))),
        _step(2, "Search.", TypeText("it's here"), KeyChord(("enter",))),
        _step(3, "Copy.", KeyChord(("ctrl", "c")), Scroll(Point(966, 546), dy=5)),
    )
    # Steps 1-3 done; deciding step 4 with the last 3 screenshots (steps 2, 3, 4).
    context = StepContext("s", "Find the weather", 4, frames=_frames(2, 3, 4), history=history)
    images = (_image(2), _image(3), _image(4))
    messages = UITARS.step_messages(context, images)
    assert [m.role for m in messages] == [
        "user",  # the prompt and the instruction
        "assistant",  # step 1: its screenshot is out of the window
        "user",
        "assistant",  # step 2 after its screenshot
        "user",
        "assistant",  # step 3
        "user",  # the screen now
    ]
    first = messages[0].text
    assert first.rstrip().endswith("Find the weather")
    assert "## Action Space" in first
    assert "click(start_box=" in first
    assert not messages[0].images
    assert messages[1].text == (
        "Thought: Open the menu.\nAction: click(start_box='<|box_start|>(23,12)<|box_end|>')"
    )
    assert messages[3].text == "Thought: Search.\nAction: type(content='it\\'s here\\n')"
    assert messages[5].text == (
        "Thought: Copy.\nAction: hotkey(key='ctrl c')\n\n"
        "scroll(start_box='<|box_start|>(966,546)<|box_end|>', direction='down')"
    )
    assert [m.images for m in messages if m.images] == [(image,) for image in images]


def test_earlier_steps_beyond_the_limit_are_dropped() -> None:
    history = tuple(_step(n, f"step {n}", Wait(5000)) for n in range(1, 31))
    context = StepContext("s", "t", 31, frames=_frames(31), history=history)
    messages = UITARS.step_messages(context, (_image(31),))
    replayed = [m.text for m in messages if m.role == "assistant"]
    assert len(replayed) == UITARS.spec.history_steps == 20
    assert replayed[0] == "Thought: step 11\nAction: wait()"


def test_a_user_reply_goes_with_the_screen_now() -> None:
    context = StepContext(
        "s", "t", 2, frames=_frames(2), history=(_step(1, "Need the code.", AskUser("?")),),
        user_reply="It is 1234",
    )  # fmt: skip
    screen = _image(2)
    messages = UITARS.step_messages(context, (screen,))
    assert messages[-1].role == "user"
    assert messages[-1].images == (screen,)
    assert "It is 1234" in messages[-1].text
    assert messages[-2].text == "Thought: Need the code.\nAction: call_user()"


RENDERED: list[tuple[ActionKind, ...]] = [
    (Click(Point(10, 20)),),
    (Click(Point(10, 20), count=2),),
    (Click(Point(10, 20), button=MouseButton.RIGHT),),
    (Move(Point(3, 4)),),
    (Drag((Point(1, 2), Point(30, 40))),),
    (Scroll(Point(5, 5), dy=-5),),
    (Scroll(Point(5, 5), dx=5),),
    (TypeText("a 'quoted' \\ back\nslash"),),
    (TypeText("submit me"), KeyChord(("enter",))),
    (KeyChord(("ctrl", "shift", "t")),),
    (KeyDown("shift"), KeyUp("shift")),
    (MouseDown(MouseButton.LEFT, Point(1, 1)), MouseUp(MouseButton.LEFT, Point(2, 2))),
    (Wait(5000),),
    (Done("it's 42"),),
]


@pytest.mark.parametrize("actions", RENDERED, ids=lambda a: type(a[0]).__name__)
def test_rendered_history_parses_back_to_the_same_actions(
    actions: tuple[ActionKind, ...],
) -> None:
    """What the model is shown of its past is in its own syntax, exactly."""
    text = UITARS.parser.render_actions(actions, UITARS.spec, GEO)
    parsed = UITARS.parse_step(f"Thought: t\nAction: {text}", GEO)
    assert parsed.actions == actions


def test_fail_and_ask_user_render_as_terminal_calls() -> None:
    assert UITARS.parser.render_actions([AskUser("?")], UITARS.spec, GEO) == "call_user()"
    assert UITARS.parser.render_actions([Fail("no")], UITARS.spec, GEO) == (
        "finished(content='no')"
    )


async def test_a_model_policy_runs_the_uitars_dialect_without_a_schema() -> None:
    engine = ScriptedEngine(
        ["I think.", "Thought: Submit the form.\nAction: click(start_box='(966,546)')"]
    )
    policy = ModelPolicy(UITARS, engine)
    frame = EncodedFrame("f1", Size(1920, 1080), ImageEncoding.PNG, image_bytes(1920, 1080))
    decision = await policy.decide(StepContext("s", "submit", 1, frames=(frame,)))
    # The first answer had no action: one retry with the repair hint, then the click.
    assert decision.attempts == 2
    assert decision.actions == (Click(Point(960, 540)),)
    assert decision.thought == "Submit the form."
    first, retry = engine.requests
    assert first.json_schema is None
    assert [m.role for m in first.messages] == ["user", "user"]
    (image,) = first.messages[-1].images
    assert (image.width, image.height) == (1932, 1092)  # the smart-resized screenshot
    assert "no Action: line" in retry.messages[-1].text
