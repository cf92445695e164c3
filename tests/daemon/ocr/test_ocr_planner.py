"""The planner's answers: valid holo JSON that the real holo dialect maps onto the target."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from PIL import Image

from holodesk.daemon.actions import (
    ActionKind,
    Click,
    Done,
    Fail,
    KeyChord,
    MouseButton,
    Scroll,
    TypeText,
    Wait,
)
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.geometry import Point, Size
from holodesk.daemon.policies.ocr.instructions import SUPPORTED_FORMS
from holodesk.daemon.policies.ocr.planner import PlannerConfig, plan
from holodesk.daemon.policies.ocr.progress import Progress
from holodesk.daemon.policies.ocr.reader import TextBox, read_text
from holodesk.daemon.policies.ocr.replace import CUA_SELECT_ALL, select_all_keys

from .screens import Box, Screen, form_screen

HOLO = get_dialect("holo")
SIZES = [(1280, 800), (1024, 640)]


@cache
def _screen(size: tuple[int, int]) -> Screen:
    screen = form_screen()
    return screen if size == (1280, 800) else screen.resized(*size)


@cache
def _words(size: tuple[int, int]) -> list[TextBox]:
    return read_text(_screen(size).image)


def _plan(task: str, size: tuple[int, int], progress: Progress | None = None) -> str:
    """Plan on a rendered screen, OCR'd once per size (read_text is the real one)."""
    return plan(task, progress or Progress(), _screen(size).image, read=lambda _: _words(size))


def _actions(text: str, size: tuple[int, int]) -> tuple[ActionKind, ...]:
    """The planner's answer through the real holo dialect, in frame pixels."""
    return HOLO.parse_step(text, HOLO.geometry(Size(*size))).actions


def _inside(point: Point, box: Box) -> bool:
    return box[0] <= point.x <= box[2] and box[1] <= point.y <= box[3]


def _answer(text: str) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(text)
    assert set(answer) in ({"note", "thought", "action"}, {"note", "thought", "actions"})
    actions = answer["actions"] if "actions" in answer else [answer["action"]]
    for action in actions:
        assert isinstance(action, dict)
        for axis in ("x", "y"):
            if axis in action:
                value = action[axis]
                assert isinstance(value, int)
                assert 0 <= value <= 1000
    return answer


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("target", ["OK", "Cancel", "Save changes", "File", "Dragon fruit"])
def test_click_lands_on_the_target(size: tuple[int, int], target: str) -> None:
    text = _plan(f'click "{target}"', size)
    answer = _answer(text)
    assert answer["action"]["action"] == "click_element"
    assert answer["action"]["element"] == target
    assert answer["note"].startswith("[ocr 1/1]")
    (click,) = _actions(text, size)
    assert isinstance(click, Click)
    assert click.button is MouseButton.LEFT
    assert click.count == 1
    assert _inside(click.point, _screen(size).texts[target])


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("label", ["Name:", "Email address:", "Comments"])
def test_type_into_clicks_the_labels_field_selects_its_text_then_types(
    size: tuple[int, int], label: str
) -> None:
    text = _plan(f'type "Ada Lovelace, née Byron ✓" into "{label.rstrip(":")}"', size)
    assert "née Byron ✓" in text  # Unicode kept as is, not \\u-escaped
    names = [action["action"] for action in _answer(text)["actions"]]
    assert names == ["click_element", "hotkey", "hotkey", "hotkey", "write"]
    click, *select, typed = _actions(text, size)
    assert isinstance(click, Click)
    assert _inside(click.point, _screen(size).fields[label])
    # What the field holds is selected, so that the typing replaces it.
    assert select == [KeyChord(keys) for keys in CUA_SELECT_ALL]
    assert typed == TypeText("Ada Lovelace, née Byron ✓")


def test_the_select_all_keys_are_the_sessions_platforms() -> None:
    size = (1280, 800)
    mac = PlannerConfig(select_all=select_all_keys("darwin"))
    text = plan(
        'type "x" into "Name"', Progress(), _screen(size).image, mac, lambda _: _words(size)
    )
    _, select, _ = _actions(text, size)
    assert select == KeyChord(("meta", "a"))  # cmd+a
    assert select_all_keys("linux") == select_all_keys("windows") == CUA_SELECT_ALL
    assert select_all_keys("web") == select_all_keys("") == CUA_SELECT_ALL


def test_type_into_a_label_without_a_field_clicks_the_label() -> None:
    size = (1280, 800)
    click, *_ = _actions(_plan('type "x" into "Customer details"', size), size)
    assert isinstance(click, Click)
    assert _inside(click.point, _screen(size).texts["Customer details"])


@pytest.mark.parametrize(
    ("task", "button", "count"),
    [('double-click "Apple"', MouseButton.LEFT, 2), ('right-click "Apple"', MouseButton.RIGHT, 1)],
)
def test_double_and_right_clicks(task: str, button: MouseButton, count: int) -> None:
    size = (1024, 640)
    (click,) = _actions(_plan(task, size), size)
    assert isinstance(click, Click)
    assert (click.button, click.count) == (button, count)
    assert _inside(click.point, _screen(size).texts["Apple"])


def test_scroll_at_a_text_scrolls_there() -> None:
    size = (1280, 800)
    (scroll,) = _actions(_plan('scroll down 4 at "Banana"', size), size)
    assert isinstance(scroll, Scroll)
    assert (scroll.dx, scroll.dy) == (0, 4)
    assert _inside(scroll.point, _screen(size).texts["Banana"])


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ('type "日本語"', (TypeText("日本語"),)),
        ("press ctrl+s", (KeyChord(("ctrl", "s")),)),
        ("wait 2.5", (Wait(2500),)),
        ("scroll up 2", (Scroll(Point(640, 400), 0, -2),)),
        ('answer "42"', (Done("42"),)),
        ("done", (Done(""),)),
    ],
)
def test_steps_that_need_no_ocr(task: str, expected: tuple[ActionKind, ...]) -> None:
    def no_ocr(image: Image.Image) -> list[TextBox]:
        raise AssertionError("this step should not read the screen")

    size = (1280, 800)
    text = plan(task, Progress(), _screen(size).image, read=no_ocr)
    _answer(text)
    assert _actions(text, size) == expected


def test_progress_selects_the_step_and_the_end_answers() -> None:
    size = (1280, 800)
    task = 'click "OK"; click "Cancel"'
    (second,) = _actions(_plan(task, size, Progress(step=1)), size)
    assert isinstance(second, Click)
    assert _inside(second.point, _screen(size).texts["Cancel"])
    assert json.loads(_plan(task, size, Progress(step=1)))["note"].startswith("[ocr 2/2]")
    assert _actions(_plan(task, size, Progress(step=2)), size) == (Done(""),)


def test_missing_text_waits_then_fails_naming_it() -> None:
    size = (1280, 800)
    config = PlannerConfig(max_retries=2, retry_wait_s=0.5)
    task = 'click "OK"; click "Delete everything"'

    def attempt(retries: int) -> str:
        words = _words(size)
        return plan(task, Progress(1, retries), _screen(size).image, config, lambda _: words)

    for retries in (0, 1):
        text = attempt(retries)
        assert json.loads(text)["note"].startswith(f"[ocr 2/2 retry {retries + 1}]")
        assert _actions(text, size) == (Wait(500),)
    (fail,) = _actions(attempt(2), size)
    assert isinstance(fail, Fail)
    assert '"Delete everything" is not on the screen' in fail.reason
    assert "step 2" in fail.reason


def test_a_task_outside_the_language_fails_with_the_supported_forms() -> None:
    size = (1280, 800)
    (fail,) = _actions(_plan("please fill in the form", size), size)
    assert isinstance(fail, Fail)
    assert SUPPORTED_FORMS in fail.reason
