"""The tool-calling dialects (nemotron-tools, hdesktop-tools) without a model: their
tools are data, every call their schemas allow parses, malformed replies are parse
errors with hints, and the history goes back as tool calls and tool turns.

The tables of test_dialect_action_space.py cover these dialects too (every example
parses to what it says, examples and gaps cover action.proto); this adds what is
specific to tool calls: the property over each tool's own parameters schema (the
one the request's `tools` carry, which vLLM's structural tag holds a call to).
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from holodesk.daemon.actions import (
    Action,
    ActionResult,
    ActionStatus,
    Click,
    Done,
    Drag,
    Fail,
    HistoryStep,
    KeyChord,
    Navigate,
    Scroll,
)
from holodesk.daemon.dialects import DialectParseError, get_dialect, load_dialect
from holodesk.daemon.dialects.tool_dialect import ToolDialect
from holodesk.daemon.engines.base import GenerationRequest, ImagePart, ToolCall
from holodesk.daemon.engines.openai_wire import chat_body
from holodesk.daemon.engines.tool_reply import read_reply, reply_text
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Point, Size
from holodesk.daemon.steps import StepContext
from tests.daemon.schema_strategy import from_schema, validator

FRAME = Size(1920, 1080)
NAMES = ("nemotron-tools", "hdesktop-tools")


def dialect(name: str) -> ToolDialect:
    found = get_dialect(name)
    assert isinstance(found, ToolDialect)
    return found


def reply(name: str, arguments: Any, content: str = "t") -> str:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return reply_text(content, [ToolCall(name, text, "c1")])


def parse(name: str, text: str) -> tuple[Any, ...]:
    d = dialect(name)
    return d.parse_step(text, d.geometry(FRAME)).actions


@pytest.mark.parametrize("name", NAMES)
def test_the_request_carries_the_tools_as_function_specs(name: str) -> None:
    d = dialect(name)
    use = d.tool_use()
    assert use.choice == "required"
    assert use.parser == "hermes"
    assert not use.parallel
    for spec in use.tools:
        assert spec["type"] == "function"
        assert spec["function"]["strict"] is True
        jsonschema.Draft202012Validator.check_schema(spec["function"]["parameters"])
    # Unconstrained (model check --dialect auto): the model may write text instead.
    free = type(d)(d.spec.model_copy(update={"structured_output": False}), d.parser)
    assert free.tool_use().choice == "auto"
    assert d.step_schema() is None  # the tools are the constraint, not a text schema


def test_nemotron_has_the_five_tools_and_hdesktop_tools_the_twelve() -> None:
    assert [t.name for t in dialect("nemotron-tools").tools] == [
        "navigate", "computer", "tabs_create", "tabs_focus", "terminate",
    ]  # fmt: skip
    hdesktop = get_dialect("hdesktop").step_schema()
    assert hdesktop is not None
    variants = hdesktop["properties"]["tool_call"]["anyOf"]
    native = {t.name: t.parameters for t in dialect("hdesktop-tools").tools}
    # The same tools: hdesktop's schemas, less the tool_name discriminator.
    for variant in variants:
        name = variant["properties"]["tool_name"]["const"]
        assert set(native[name]["properties"]) == set(variant["properties"]) - {"tool_name"}


@pytest.mark.parametrize("name", NAMES)
def test_every_call_the_tool_schemas_allow_parses(name: str) -> None:
    d = dialect(name)
    tools = d.tools
    validators = {t.name: validator(t.parameters) for t in tools}

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        st.sampled_from(tools).flatmap(
            lambda t: st.tuples(st.just(t.name), from_schema(t.parameters))
        )
    )
    def check(call: tuple[str, dict[str, Any]]) -> None:
        tool, arguments = call
        validators[tool](arguments)
        try:
            d.parse_step(reply(tool, arguments), d.geometry(FRAME))
        except DialectParseError as exc:
            pytest.fail(f"schema-valid call refused: {exc.message} ({exc.hint})\n{arguments}")

    check()


def test_nemotron_calls_become_contract_actions() -> None:
    computer = {
        "actions": [
            {"action": "left_click", "coordinate": [0.5, 0.5]},
            {"action": "left_click_drag", "start_coordinate": [0, 0], "coordinate": [1, 1]},
            {"action": "scroll", "coordinate": [0.25, 0.5],
             "scroll_parameters": {"scroll_direction": "up", "scroll_amount": 4}},
        ]
    }  # fmt: skip
    assert parse("nemotron-tools", reply("computer", computer)) == (
        Click(Point(960, 540)),
        Drag((Point(0, 0), Point(1920, 1080))),
        Scroll(Point(480, 540), dy=-4),
    )
    assert parse("nemotron-tools", reply("navigate", {"url": "forward"})) == (
        KeyChord(("alt", "right")),
    )
    assert parse("nemotron-tools", reply("tabs_create", {"url": "https://a.example"})) == (
        KeyChord(("ctrl", "t")),
        Navigate("https://a.example"),
    )
    assert parse("nemotron-tools", reply("terminate", {"status": "failure", "answer": "no"})) == (
        Fail("no"),
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (reply_text("I think the button is there.", []), "text"),
        ("plain text, no reply at all", "not a tool reply"),
        (
            reply_text("", [ToolCall("terminate", "{}", "a"), ToolCall("navigate", "{}", "b")]),
            "2 tool calls",
        ),
        (reply("shell", {"cmd": "rm -rf /"}), "unknown tool"),
        (reply("computer", '{"actions": [{"action": "left_cl'), "not JSON"),
        (reply("computer", "[1, 2]"), "not an object"),
        (reply("computer", {"actions": []}), "actions is"),
        (reply("computer", {"actions": [{"action": "left_click"}]}), "no coordinate"),
        (reply("computer", {"actions": [{"action": "left_click", "coordinate": [2, 0]}]}),
         "outside the image"),
        (reply("computer", {"actions": [{"action": "fly"}]}), "action is"),
        (reply("computer", {"actions": [{"action": "key_press", "keys": ["nokey"]}]}),
         "unknown key"),
        (reply("tabs_focus", {"tab_id": 12}), "tab_id"),
        (reply("terminate", {"status": "maybe", "answer": ""}), "status"),
        (reply("computer", {"actions": [{"action": "wait", "duration": 3600}]}), "duration"),
    ],
)  # fmt: skip
def test_malformed_calls_are_parse_errors_with_hints(text: str, error: str) -> None:
    with pytest.raises(DialectParseError, match=error) as caught:
        parse("nemotron-tools", text)
    assert caught.value.hint


def test_hdesktop_tools_reuses_the_hdesktop_handlers() -> None:
    call = {"element": "Save", "x": 500, "y": 500, "button": "middle"}
    (click,) = parse("hdesktop-tools", reply("click_desktop", call))
    assert click == Click(Point(960, 540), button=click.button)
    assert click.button.value == "middle"
    with pytest.raises(DialectParseError, match="direction"):
        parse("hdesktop-tools", reply("scroll_desktop", {"element": "", "x": 1, "y": 1}))
    d = dialect("hdesktop-tools")
    plan = {"goals": [{"title": "Open the report", "status": "running"}]}
    step = d.parse_step(reply("update_plan", plan), d.geometry(FRAME))
    assert step.actions == ()
    assert "<plan>" in step.note


def _context(name: str) -> tuple[ToolDialect, StepContext]:
    d = dialect(name)
    frames = tuple(EncodedFrame(f"f{n}", FRAME, ImageEncoding.PNG) for n in (1, 2, 3))
    history = (
        HistoryStep(
            1,
            (Action("a1", "f1", Click(Point(960, 540))),),
            thought="clicking #1#",
            results=(ActionResult("a1", ActionStatus.OK),),
            frame_size=FRAME,
        ),
        HistoryStep(
            2,
            (Action("a2", "f2", Done("42")),),
            thought="done #2#",
            results=(ActionResult("a2", ActionStatus.FAILED, "no window"),),
            frame_size=FRAME,
        ),
    )
    return d, StepContext("s", "Find the total", 3, frames=frames, history=history)


@pytest.mark.parametrize("name", NAMES)
def test_the_history_goes_back_as_tool_calls_and_tool_turns(name: str) -> None:
    d, context = _context(name)
    images = tuple(ImagePart(f.frame_id.encode(), "image/png", 64, 40) for f in context.frames)
    messages = d.step_messages(context, images)
    calls = [m for m in messages if m.tool_calls]
    tools = [m for m in messages if m.role == "tool"]
    assert [m.tool_calls[0].id for m in calls] == ["call_1", "call_2"]
    assert [m.tool_call_id for m in tools] == ["call_1", "call_2"]
    assert tools[0].text == "ok"
    assert tools[1].text == "error: failed: no window"
    assert "#1#" in calls[0].text  # what the model said besides its call
    # The call is the parsed step, in the model's coordinates: it parses back.
    first = calls[0].tool_calls[0]
    again = d.parse_step(reply_text("", [first]), d.geometry(FRAME)).actions
    assert again == (Click(Point(960, 540)),)
    assert messages[-1].role == "user"
    assert messages[-1].images == (images[-1],)
    # Over the OpenAI API: assistant tool_calls with JSON-text arguments, tool turns
    # with their id, the tools and a forced tool_choice.
    body = chat_body(GenerationRequest("r", messages, tools=d.tool_use()), model="m")
    wire = [m for m in body["messages"] if m.get("tool_calls")]
    assert json.loads(wire[0]["tool_calls"][0]["function"]["arguments"]) == json.loads(
        first.arguments
    )
    assert [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"] == [
        "call_1",
        "call_2",
    ]
    assert body["tool_choice"] == "required"
    assert len(body["tools"]) == len(d.tools)


def test_a_repair_answers_the_bad_call_with_the_error() -> None:
    d = dialect("nemotron-tools")
    bad = reply("tabs_focus", {"tab_id": 12})
    with pytest.raises(DialectParseError) as caught:
        d.parse_step(bad, d.geometry(FRAME))
    repaired = d.repair_messages((), bad, caught.value)
    assert [m.role for m in repaired] == ["assistant", "tool"]
    assert repaired[0].tool_calls[0].name == "tabs_focus"
    assert "tab_id" in repaired[1].text
    assert repaired[1].tool_call_id == "c1"


def test_the_tool_parser_is_chosen_in_a_dialect_file(tmp_path: Any) -> None:
    path = tmp_path / "nemotron3.toml"
    path.write_text('base = "nemotron-tools"\nname = "nemotron3"\ntool_parser = "qwen3_coder"\n')
    loaded = load_dialect(path)
    assert isinstance(loaded, ToolDialect)
    assert loaded.tool_use().parser == "qwen3_coder"


def test_the_reply_format_round_trips() -> None:
    text = reply_text("hm", [ToolCall("navigate", '{"url": "x"}', "id9")])
    assert read_reply(text).calls == (ToolCall("navigate", '{"url": "x"}', "id9"),)
    with pytest.raises(ValueError, match="not a tool reply"):
        read_reply('{"thought": "x"}')


def test_a_located_element_is_read_from_a_point_or_a_call() -> None:
    nemotron, hdesktop = dialect("nemotron-tools"), dialect("hdesktop-tools")
    geo = nemotron.geometry(FRAME)
    assert nemotron.parse_location('{"coordinate": [0.5, 0.25]}', geo).point == Point(960, 270)
    click = reply("computer", {"actions": [{"action": "left_click", "coordinate": [1, 1]}]})
    assert nemotron.parse_location(click, geo).point == Point(1920, 1080)
    hgeo = hdesktop.geometry(FRAME)
    assert hdesktop.parse_location('{"x": 500, "y": 1000}', hgeo).point == Point(960, 1080)
    with pytest.raises(DialectParseError):
        nemotron.parse_location(reply("terminate", {"status": "success", "answer": ""}), geo)


@pytest.mark.parametrize("name", NAMES)
def test_every_example_renders_back_to_a_call_that_parses_the_same(name: str) -> None:
    """The history's calls are rebuilt from actions: for every worked example, the
    call its actions render to parses to the same actions again."""
    d = dialect(name)
    space = d.action_space
    assert space is not None
    geo = d.geometry(FRAME)
    for form, example in space.examples():
        step = d.parse_step(space.write(form, example.args, ""), geo)
        call = d.family.call_of(step.actions, step.note, geo)
        assert call is not None, form.name
        text = reply(call.name, dict(call.arguments))
        assert d.parse_step(text, geo).actions == step.actions, form.name
