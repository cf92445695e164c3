"""Property tests: the uitars parser only ever raises DialectParseError, and whatever
it accepts has finite coordinates inside the frame."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from holodesk.daemon.actions import points_of
from holodesk.daemon.dialects import DialectParseError, get_dialect
from holodesk.daemon.dialects.uitars.calls import decode_escapes
from holodesk.daemon.geometry import Point, Size

FRAME = Size(1280, 720)
DIALECTS = [get_dialect("uitars"), get_dialect("uitars1.0")]


def _inside(point: Point) -> None:
    assert math.isfinite(point.x)
    assert math.isfinite(point.y)
    assert 0 <= point.x <= FRAME.width
    assert 0 <= point.y <= FRAME.height


def _must_parse_or_raise_typed(text: str) -> None:
    """Both parse entry points of both dialects: a usable result or DialectParseError."""
    for dialect in DIALECTS:
        geometry = dialect.geometry(FRAME)
        error: DialectParseError | None = None
        try:
            step = dialect.parse_step(text, geometry)
        except DialectParseError as exc:
            error = exc
        else:
            assert step.actions
            for action in step.actions:
                for point in points_of(action):
                    _inside(point)
        try:
            _inside(dialect.parse_location(text, geometry).point)
        except DialectParseError as exc:
            error = error or exc
        if error is not None:  # every error explains itself and says how to fix it
            assert error.message
            assert error.hint


names = st.sampled_from(
    ["click", "left_single", "left_double", "right_single", "drag", "select", "hotkey",
     "press", "keydown", "keyup", "type", "scroll", "wait", "finished", "call_user", "hover",
     "move_to", "mouse_down", "mouse_up", "release", "teleport"]
)  # fmt: skip
keys = st.sampled_from(
    ["start_box", "end_box", "point", "start_point", "end_point", "content", "key",
     "direction", "button", "seconds", "x"]
)  # fmt: skip
numbers = st.one_of(
    st.integers(-100, 3000).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e999", "-0", "nan", "9" * 400, "", "1.5.2"]),
)
boxes = st.one_of(
    st.tuples(numbers, numbers).map(lambda p: f"({p[0]},{p[1]})"),
    st.tuples(numbers, numbers, numbers, numbers).map(lambda p: f"[{','.join(p)}]"),
    st.tuples(numbers, numbers).map(lambda p: f"<|box_start|>({p[0]},{p[1]})<|box_end|>"),
    st.tuples(numbers, numbers).map(lambda p: f"<point>{p[0]} {p[1]}</point>"),
)
values = st.one_of(
    boxes,
    st.text(max_size=30),
    st.sampled_from(["down", "up", "ctrl c", "enter", "left", "\\n", "\\", "'", '"', ")"]),
)
quotes = st.sampled_from(["'", '"', ""])


@st.composite
def calls(draw: st.DrawFn) -> str:
    args = draw(st.lists(st.tuples(keys, values, quotes), max_size=4))
    rendered = ", ".join(f"{k}={q}{v}{q}" for k, v, q in args)
    return f"{draw(names)}({rendered})"


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_parser_only_raises_parse_errors_on_any_text(text: str) -> None:
    _must_parse_or_raise_typed(text)


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=60), st.lists(calls(), min_size=1, max_size=4), st.text(max_size=20))
def test_parser_only_raises_parse_errors_on_adversarial_calls(
    thought: str, actions: list[str], tail: str
) -> None:
    _must_parse_or_raise_typed(f"Thought: {thought}\nAction: " + "\n\n".join(actions) + tail)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(
    ["Thought:", "Action:", "Action：", "Reflection:", "Action_Summary:", "click(", "type(",
     "content=", "start_box=", "'", '"', "\\", "(", ")", "[", "]", ",", "\n", "\n\n", " ",
     "<|box_start|>", "<|box_end|>", "<point>", "</point>", "12", "-3", "x", "<think>",
     "</think>"]
), max_size=40))  # fmt: skip
def test_parser_only_raises_parse_errors_on_token_soup(tokens: list[str]) -> None:
    _must_parse_or_raise_typed("".join(tokens))


@given(st.text(max_size=80))
def test_escapes_decode_like_python_literals_for_the_common_cases(text: str) -> None:
    """Escaping as the prompt asks (\\\\, \\', \\", \\n) and decoding give the text back."""
    escaped = (
        text.replace("\\", "\\\\").replace("'", "\\'").replace('"', '\\"').replace("\n", "\\n")
    )
    assert decode_escapes(escaped) == text


@pytest.mark.parametrize(
    "text",
    [
        "(" * 100_000,
        "'" * 100_000,
        "Action: " * 20_000,
        "Action:\n" * 20_000,
        "<think>" * 20_000 + "</think>" + "<think>" * 5_000,
        "Thought: t\nAction: " + "click(" * 20_000,
        "Thought: t\nAction: click(start_box='" + "(" * 50_000 + "')",
        "Thought: t\nAction: type(content='" + "\\" * 10_001 + "')",
        "Thought: t\nAction: type(content='" + "' , x='" * 5_000 + "')",
        "Thought: t\nAction: click(start_box='(" + "9" * 5000 + ",1)')",
        "Thought: t\nAction: type(content='\\N{NO SUCH CHARACTER}\\U99999999\\x4')",
        "Thought: t\nAction: " + "wait()\n\n" * 10_000,
        "\x00\ud800Action: click(start_box='(1,1)')",
        "x" * 300_000,
    ],
)
def test_parser_survives_pathological_inputs(text: str) -> None:
    _must_parse_or_raise_typed(text)
