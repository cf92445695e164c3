"""The OCR baseline's task language."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from holodesk.daemon.policies.ocr.instructions import (
    SUPPORTED_FORMS,
    Click,
    Done,
    InstructionError,
    Press,
    Scroll,
    Step,
    TypeText,
    Wait,
    describe,
    parse,
)


@pytest.mark.parametrize(
    ("task", "steps"),
    [
        ('click "OK"', [Click("OK")]),
        ('Click "OK"', [Click("OK")]),
        ("click 'Open file'", [Click("Open file")]),
        ("click “Fichier”", [Click("Fichier")]),
        ("click «Fenêtre»", [Click("Fenêtre")]),
        ('double-click "File"', [Click("File", "left", 2)]),
        ('double click "File"', [Click("File", "left", 2)]),
        ('right-click "Item"', [Click("Item", "right")]),
        ('right click "Item"', [Click("Item", "right")]),
        ('type "héllo wörld" into "Name"', [TypeText("héllo wörld", "Name")]),
        ('type "x" in "Name"', [TypeText("x", "Name")]),
        ('type "日本語のテキスト"', [TypeText("日本語のテキスト")]),
        ('type "say \\"hi\\"; then leave"', [TypeText('say "hi"; then leave')]),
        ("press ctrl+s", [Press(("ctrl", "s"))]),
        ("press Enter", [Press(("enter",))]),
        ("press ctrl + shift + T", [Press(("ctrl", "shift", "t"))]),
        ("press return", [Press(("enter",))]),
        ("press ctrl++", [Press(("ctrl", "+"))]),
        ("scroll down", [Scroll("down")]),
        ("scroll up 5", [Scroll("up", 5)]),
        ('scroll down 3 at "List"', [Scroll("down", 3, "List")]),
        ('scroll left at "Timeline"', [Scroll("left", 3, "Timeline")]),
        ("wait", [Wait(1.0)]),
        ("wait 2.5", [Wait(2.5)]),
        ("wait 2 seconds", [Wait(2.0)]),
        ('answer "42"', [Done("42")]),
        ("done", [Done("")]),
        (
            'click "File"; click "Open" then type "a.txt"\npress enter',
            [Click("File"), Click("Open"), TypeText("a.txt"), Press(("enter",))],
        ),
        ('click "OK";;\n\n', [Click("OK")]),
        ('click "Then"', [Click("Then")]),
    ],
)
def test_parse(task: str, steps: list[Step]) -> None:
    assert parse(task) == steps


@pytest.mark.parametrize(
    ("task", "why"),
    [
        ("", "no steps"),
        ("  ;  then ", "no steps"),
        ("open the file menu", "unknown verb `open`"),
        ("click OK", "one quoted, non-empty text"),
        ('click ""', "one quoted, non-empty text"),
        ('click "A" "B"', "one quoted, non-empty text"),
        ('"OK"', "starts with a verb"),
        ("type hello", "text in quotes"),
        ('type "a" onto "B"', 'only `into "LABEL"`'),
        ('type "a" into', 'only `into "LABEL"`'),
        ("press", "needs key names"),
        ('press "ctrl"', "needs key names"),
        ("press ctrl+flux", "unknown key"),
        ("scroll sideways", "needs a direction"),
        ("scroll down 0", "whole number 1-50"),
        ("scroll down 51", "whole number 1-50"),
        ("scroll down lots", "whole number 1-50"),
        ('scroll down 2 near "List"', 'only `at "TEXT"`'),
        ("wait forever", "number of seconds"),
        ("wait 0", "more than 0"),
        ("wait 31", "at most 30"),
        ("wait 2 minutes", "seconds only"),
        ("answer", "one quoted"),
        ("done now", "takes nothing after it"),
        ('click "OK', "never closed"),
    ],
)
def test_parse_errors_say_why_and_list_the_supported_forms(task: str, why: str) -> None:
    with pytest.raises(InstructionError) as caught:
        parse(task)
    message = str(caught.value)
    assert why in message
    assert SUPPORTED_FORMS in message


def test_parse_error_names_the_step() -> None:
    with pytest.raises(InstructionError, match=r"step 2 `fly away`"):
        parse('click "OK"; fly away')


@given(st.text())
def test_any_text_is_steps_or_the_typed_error(task: str) -> None:
    try:
        steps = parse(task)
    except InstructionError as exc:
        message = str(exc)
    else:
        assert steps
        return
    assert SUPPORTED_FORMS in message


@given(
    st.lists(
        st.sampled_from(
            [
                "click",
                "type",
                "into",
                "press",
                "wait",
                "then",
                ";",
                "\n",
                '"',
                "'",
                "“",
                "\\",
                "scroll",
                "down",
                "at",
                "3",
                "1e9",
                "nan",
                "inf",
                "+",
                "ctrl",
                "answer",
                "done",
                "x",
            ]
        ),
        max_size=12,
    )
)
def test_keyword_soup_is_steps_or_the_typed_error(tokens: list[str]) -> None:
    with contextlib.suppress(InstructionError):
        parse(" ".join(tokens))


_TEXT = st.text(st.characters(exclude_categories=["Cs"]), min_size=1).filter(str.strip)
_STEPS = st.one_of(
    st.builds(Click, _TEXT),
    st.builds(Click, _TEXT, st.just("left"), st.just(2)),
    st.builds(Click, _TEXT, st.just("right")),
    st.builds(TypeText, _TEXT, st.none() | _TEXT),
    st.builds(Press, st.sampled_from([("ctrl", "s"), ("enter",), ("ctrl", "+"), ("alt", "f4")])),
    st.builds(
        Scroll,
        st.sampled_from(["up", "down", "left", "right"]),
        st.integers(1, 50),
        st.none() | _TEXT,
    ),
    st.builds(Wait, st.sampled_from([0.5, 1.0, 2.0, 30.0])),
    st.builds(Done, st.just("") | _TEXT),
)


@given(st.lists(_STEPS, min_size=1, max_size=5))
def test_describe_writes_steps_that_parse_back(steps: list[Step]) -> None:
    task = "; ".join(describe(step) for step in steps)
    assert parse(task) == steps
