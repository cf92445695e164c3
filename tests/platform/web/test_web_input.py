"""What a real page receives from each action of the web backend.

The event-level checks every backend passes live in tests/platform/conformance.py;
here are the target for them and what only a page shows (DOM names and flags,
scrolling, history navigation, form submission).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from holodesk.platform.base import MouseButton
from holodesk.platform.errors import PlatformError
from holodesk.platform.web.backend import WebBackend
from holodesk.platform.web.input import WebInput
from tests.platform.conformance import conformance_test
from tests.platform.web.support import WebTarget, events, wait_for

pytestmark = pytest.mark.web

PAD = (640, 500)  # a point on the #pad div of events.html


@pytest.fixture
def target(open_page: Callable[..., WebBackend]) -> WebTarget:
    return WebTarget(open_page())


test_conformance = conformance_test(
    checked_elsewhere={
        "browser-keys": "browser keys navigate the tab: test_web_key_vocabulary.py checks that"
    }
)


def focus_field(web: WebBackend, element: str = "field") -> None:
    web.page.evaluate(f"document.getElementById('{element}').focus()")


def value_of(web: WebBackend, element: str) -> str:
    value: str = web.page.evaluate(f"document.getElementById('{element}').value")
    return value


def test_buttons_have_their_dom_numbers_and_bits(web: WebBackend) -> None:
    web.page.evaluate(
        "window.addEventListener('mouseup', (e) => e.button > 2 && e.preventDefault())"
    )
    order = [MouseButton.LEFT, MouseButton.RIGHT, MouseButton.MIDDLE, MouseButton.BACK,
             MouseButton.FORWARD]  # fmt: skip
    for offset, button in enumerate(order):
        web.input.click(PAD[0] + 50 * offset, PAD[1], button=button)
    # MouseEvent.button, and the MouseEvent.buttons bit while it is down.
    downs = [(e["button"], e["buttons"]) for e in events(web, "mousedown")]
    assert downs == [(0, 1), (2, 2), (1, 4), (3, 8), (4, 16)]
    assert [e["buttons"] for e in events(web, "mouseup")] == [0] * 5
    assert [e["button"] for e in events(web, "contextmenu")] == [2]
    assert [e["button"] for e in events(web, "auxclick")] == [2, 1, 3, 4]
    assert [e["button"] for e in events(web, "click")] == [0], "only the left button clicks"


def test_a_multi_click_is_one_series_however_slow_the_machine(web: WebBackend) -> None:
    # Every clock reading 10 s after the last: far past the double-click interval
    # between any two presses, as on a machine too loaded to keep up.
    readings = itertools.count(step=10.0)
    slow = WebInput(web.page, clock=lambda: next(readings))
    slow.click(*PAD, count=3)
    slow.click(*PAD)  # a separate click that slow is a new series
    assert [e["detail"] for e in events(web, "mousedown")] == [1, 2, 3, 1]
    assert [e["detail"] for e in events(web, "mouseup")] == [1, 2, 3, 1]
    assert len(events(web, "dblclick")) == 1


def test_back_and_forward_buttons_move_through_history(
    open_page: Callable[..., WebBackend], site: str
) -> None:
    web = open_page("second.html")
    assert web.navigator is not None
    web.navigator.navigate(f"{site}/events.html")
    web.input.click(*PAD, button=MouseButton.BACK)
    wait_for(lambda: _loaded(web, "/second.html"), "going back")
    web.input.click(*PAD, button=MouseButton.FORWARD)
    wait_for(lambda: _loaded(web, "/events.html"), "going forward")
    # The log survives in sessionStorage: the page saw each press before it left.
    downs = [(e["page"], e["button"]) for e in events(web, "mousedown")]
    assert downs == [("/events.html", 3), ("/second.html", 4)]


def _loaded(web: WebBackend, path: str) -> bool:
    try:
        state = web.page.evaluate("location.pathname + ' ' + document.readyState")
    except PlatformError:
        return False  # asked mid-navigation: the old page's context is gone
    return bool(state == f"{path} complete")


@pytest.mark.parametrize(
    ("dx", "dy", "expected"),
    [(0, 2, (0, 100)), (0, -2, (0, -100)), (2, 0, (100, 0)), (-2, 0, (-100, 0))],
    ids=["down", "up", "right", "left"],
)
def test_the_wheel_scrolls_the_page(
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


def test_drag_holds_the_buttons_bit(web: WebBackend) -> None:
    path = [(100, 300), (150, 320), (200, 340), (260, 380)]
    web.input.drag(path, duration_s=0)
    moves = [e["buttons"] for e in events(web, "mousemove")][-3:]
    assert moves == [1, 1, 1]
    assert events(web, "mouseup")[-1]["buttons"] == 0


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


def test_auto_repeat_is_marked_repeat(web: WebBackend) -> None:
    focus_field(web)
    web.input.key_down("b")
    web.input.key_down("b")
    web.input.key_up("b")
    assert [(e["type"], e["repeat"]) for e in events(web, "keydown", "keyup")] == [
        ("keydown", False),
        ("keydown", True),
        ("keyup", False),
    ]


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


def test_text_beyond_the_bmp_arrives_as_one_insertion(web: WebBackend) -> None:
    text = "héllo wörld ñ € 日本 👍🏽"
    focus_field(web)
    web.input.type_text(text)
    assert value_of(web, "field") == text
    inputs = events(web, "input")
    assert [e["data"] for e in inputs] == [text]
    assert inputs[0]["inputType"] == "insertText"


def test_a_key_off_the_us_keyboard_is_its_own_key(web: WebBackend) -> None:
    focus_field(web)
    web.input.key_chord(["é"])
    web.input.key_chord(["€"])
    assert [e["key"] for e in events(web, "keydown")] == ["é", "€"]


def test_enter_in_text_submits_like_a_keyboard(web: WebBackend) -> None:
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


def test_release_all_releases_buttons_before_keys(web: WebBackend) -> None:
    web.input.move(*PAD)
    web.input.key_down("ctrl")
    web.input.mouse_down(MouseButton.LEFT)
    web.input.release_all()
    ups = events(web, "mouseup", "keyup")
    assert [(e["type"], e.get("key")) for e in ups][-2:] == [
        ("mouseup", None),
        ("keyup", "Control"),
    ]


def test_the_pointer_starts_at_the_origin(web: WebBackend) -> None:
    assert web.input.cursor_position() == (0, 0)
    assert not events(web, "mousedown", "mousemove")
