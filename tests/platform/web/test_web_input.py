"""Event-level conformance of the web backend: what a real page receives from each action."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from holodesk.platform.backends.web import WebBackend
from holodesk.platform.base import MouseButton
from holodesk.platform.errors import InputError
from tests.platform.web.support import events, wait_for

pytestmark = pytest.mark.web

UNICODE_TEXT = "héllo wörld ñ € 日本 👍🏽"
PAD = (640, 500)  # a point on the #pad div of events.html


def focus_field(web: WebBackend, element: str = "field") -> None:
    web.page.evaluate(f"document.getElementById('{element}').focus()")


def value_of(web: WebBackend, element: str) -> str:
    value: str = web.page.evaluate(f"document.getElementById('{element}').value")
    return value


@pytest.mark.parametrize("count", [1, 2, 3])
def test_click_counts_reach_the_page_as_one_series(web: WebBackend, count: int) -> None:
    web.input.click(*PAD, count=count)

    downs = events(web, "mousedown")
    assert [e["detail"] for e in downs] == list(range(1, count + 1))
    assert {(e["x"], e["y"], e["button"], e["target"]) for e in downs} == {(*PAD, 0, "pad")}
    assert [e["detail"] for e in events(web, "click")] == list(range(1, count + 1))
    assert len(events(web, "dblclick")) == (1 if count >= 2 else 0)


def test_clicks_apart_in_space_do_not_make_a_double_click(web: WebBackend) -> None:
    web.input.click(*PAD)
    web.input.click(PAD[0] + 50, PAD[1])
    assert [e["detail"] for e in events(web, "mousedown")] == [1, 1]
    assert not events(web, "dblclick")


def test_click_with_modifiers_holds_them_during_the_click_only(web: WebBackend) -> None:
    web.input.click(*PAD, modifiers=["ctrl", "shift"])
    (down,) = events(web, "mousedown")
    assert (down["ctrl"], down["shift"], down["alt"], down["meta"]) == (True, True, False, False)
    web.input.click(PAD[0] + 50, PAD[1], modifiers=["Alt", "cmd"])
    second = events(web, "mousedown")[-1]
    assert (second["ctrl"], second["shift"], second["alt"], second["meta"]) == (
        False,
        False,
        True,
        True,
    )
    assert web.input.held() == ((), ())


def test_right_and_middle_clicks(web: WebBackend) -> None:
    web.input.click(*PAD, button=MouseButton.RIGHT)
    web.input.click(PAD[0] + 50, PAD[1], button=MouseButton.MIDDLE)
    downs = events(web, "mousedown")
    assert [(e["button"], e["buttons"]) for e in downs] == [(2, 2), (1, 4)]
    assert [e["button"] for e in events(web, "contextmenu")] == [2]
    assert [e["button"] for e in events(web, "auxclick")] == [2, 1]
    assert not events(web, "click"), "only the left button makes a click event"


def test_drag_moves_with_the_button_held_along_the_path(web: WebBackend) -> None:
    path = [(100, 300), (150, 320), (200, 340), (260, 380)]
    web.input.drag(path, duration_s=0)

    logged = events(web, "mousedown", "mousemove", "mouseup")
    down = next(i for i, e in enumerate(logged) if e["type"] == "mousedown")
    assert (logged[down]["x"], logged[down]["y"]) == path[0]
    during = logged[down + 1 :]
    moves = [(e["x"], e["y"]) for e in during if e["type"] == "mousemove"]
    assert moves == path[1:]
    assert all(e["buttons"] == 1 for e in during if e["type"] == "mousemove")
    up = during[-1]
    assert (up["type"], up["x"], up["y"], up["buttons"]) == ("mouseup", *path[-1], 0)


@pytest.mark.parametrize(
    ("dx", "dy", "expected"),
    [(0, 2, (0, 100)), (0, -2, (0, -100)), (2, 0, (100, 0)), (-2, 0, (-100, 0))],
    ids=["down", "up", "right", "left"],
)
def test_wheel_in_four_directions(
    web: WebBackend, dx: int, dy: int, expected: tuple[int, int]
) -> None:
    start = (300, 300)
    backwards = dx < 0 or dy < 0
    if backwards:  # scroll away from the origin first, so there is room to go back
        web.page.evaluate("window.scrollTo(1000, 1000)")
    web.input.scroll(*start, dx, dy)

    wheels = events(web, "wheel")
    assert [(e["deltaX"], e["deltaY"]) for e in wheels] == [expected] * 2
    assert {(e["x"], e["y"], e["deltaMode"]) for e in wheels} == {(*start, 0)}
    # And the page really scrolls that way (asynchronously, on the compositor).
    axis = "scrollX" if dx else "scrollY"
    origin, sign = (1000, -1) if backwards else (0, 1)
    wait_for(
        lambda: (web.page.evaluate(f"window.{axis}") - origin) * sign > 0,
        f"the page to scroll {expected}",
    )


def test_key_chords_carry_modifiers_and_do_what_they_do(web: WebBackend) -> None:
    focus_field(web)
    web.input.type_text("select me")
    web.input.key_chord(["ctrl", "a"])
    web.input.type_text("X")
    # Ctrl+A selected everything, so typing replaced it.
    assert value_of(web, "field") == "X"

    web.input.key_chord(["shift", "tab"])
    keys = [(e["type"], e["key"], e["code"], e["ctrl"], e["shift"]) for e in events(web, "keydown")]
    assert keys == [
        ("keydown", "Control", "ControlLeft", True, False),
        ("keydown", "a", "KeyA", True, False),
        ("keydown", "Shift", "ShiftLeft", False, True),
        ("keydown", "Tab", "Tab", False, True),
    ]
    ups = [(e["key"], e["ctrl"], e["shift"]) for e in events(web, "keyup")]
    assert ups == [("a", True, False), ("Control", False, False), ("Tab", False, True),
                   ("Shift", False, False)]  # fmt: skip


def test_shift_gives_the_shifted_character(web: WebBackend) -> None:
    focus_field(web)
    web.input.key_chord(["shift", "a"])
    web.input.key_chord(["shift", "1"])
    web.input.key_chord(["A"])
    assert value_of(web, "field") == "A!A"
    downs = [(e["key"], e["code"], e["keyCode"]) for e in events(web, "keydown")]
    assert ("A", "KeyA", 65) in downs
    assert ("!", "Digit1", 49) in downs


def test_key_down_and_up_separately_with_auto_repeat(web: WebBackend) -> None:
    focus_field(web)
    web.input.key_down("shift")
    web.input.key_down("b")
    web.input.key_down("b")
    web.input.key_up("b")
    web.input.key_up("shift")

    logged = [
        (e["type"], e["key"], e["shift"], e["repeat"]) for e in events(web, "keydown", "keyup")
    ]
    assert logged == [
        ("keydown", "Shift", True, False),
        ("keydown", "B", True, False),
        ("keydown", "B", True, True),
        ("keyup", "B", True, False),
        ("keyup", "Shift", False, False),
    ]
    assert value_of(web, "field") == "BB"
    assert web.input.held() == ((), ())


def test_named_keys_have_their_dom_names(web: WebBackend) -> None:
    focus_field(web)
    for key in ("enter", "escape", "up", "pagedown", "home", "menu", "backspace", "space", "f2"):
        web.input.key_chord([key])
    names = [(e["key"], e["code"]) for e in events(web, "keydown")]
    assert names == [
        ("Enter", "Enter"),
        ("Escape", "Escape"),
        ("ArrowUp", "ArrowUp"),
        ("PageDown", "PageDown"),
        ("Home", "Home"),
        ("ContextMenu", "ContextMenu"),
        ("Backspace", "Backspace"),
        (" ", "Space"),
        ("F2", "F2"),
    ]


def test_unicode_text_arrives_intact(web: WebBackend) -> None:
    focus_field(web)
    web.input.type_text(UNICODE_TEXT)
    assert value_of(web, "field") == UNICODE_TEXT
    inputs = events(web, "input")
    assert [e["data"] for e in inputs] == [UNICODE_TEXT]
    assert inputs[0]["inputType"] == "insertText"


def test_a_key_off_the_us_keyboard_types_its_character(web: WebBackend) -> None:
    focus_field(web)
    web.input.key_chord(["é"])
    web.input.key_chord(["€"])
    assert value_of(web, "field") == "é€"
    assert [e["key"] for e in events(web, "keydown")] == ["é", "€"]


def test_multiline_and_shell_hostile_text_in_a_textarea(web: WebBackend) -> None:
    focus_field(web, "area")
    web.page.evaluate("document.getElementById('area').value = ''")
    text = "line one\nline two $(rm -rf /) `id` 'q' \"d\" \\ %s {x}\r\nthree"
    web.input.type_text(text)
    # Line breaks go as Enter keys; a textarea turns each into "\n".
    assert value_of(web, "area") == text.replace("\r\n", "\n")
    assert [e["key"] for e in events(web, "keydown")] == ["Enter", "Enter"]


def test_enter_in_text_submits_like_a_keyboard(open_page: Callable[..., WebBackend]) -> None:
    web = open_page()
    web.page.evaluate(
        """() => {
        const form = document.createElement('form');
        form.onsubmit = (e) => { e.preventDefault(); document.title = 'submitted'; };
        form.appendChild(document.getElementById('field'));
        document.body.appendChild(form);
        document.getElementById('field').focus();
    }"""
    )
    web.input.type_text("query\n")
    assert web.page.evaluate("document.title") == "submitted"


def test_control_characters_are_refused_before_anything_is_sent(web: WebBackend) -> None:
    focus_field(web)
    with pytest.raises(InputError, match="U\\+0007"):
        web.input.type_text("ab\x07c")
    assert value_of(web, "field") == ""


def test_release_all_lets_go_of_keys_and_buttons(web: WebBackend) -> None:
    web.input.move(*PAD)
    web.input.key_down("ctrl")
    web.input.mouse_down(MouseButton.LEFT)
    web.input.release_all()
    assert web.input.held() == ((), ())
    ups = events(web, "mouseup", "keyup")
    assert [(e["type"], e.get("key")) for e in ups][-2:] == [
        ("mouseup", None),
        ("keyup", "Control"),
    ]


def test_points_off_the_viewport_are_refused(web: WebBackend) -> None:
    with pytest.raises(ValueError, match="outside"):
        web.input.move(1280, 10)
    with pytest.raises(ValueError, match="outside"):
        web.input.click(-1, 10)
    assert not events(web, "mousedown", "mousemove")
    assert web.input.cursor_position() == (0, 0)
    web.input.move(1279, 799)
    assert web.input.cursor_position() == (1279, 799)
