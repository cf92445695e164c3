"""QuartzInput builds the exact CGEvent sequence for every action.

macOS cannot run here: FakeQuartzApi (tests/platform/macos/fake_api.py) stands in for
the OS calls and records every event value the backend would create and post.
"""

from __future__ import annotations

import pytest

from holodesk.platform.base import Backend, MouseButton
from holodesk.platform.errors import InputError
from holodesk.platform.macos import backend as quartz
from holodesk.platform.macos import cg
from holodesk.platform.macos.api import KeyEvent, MouseEvent, ScrollEvent
from holodesk.platform.macos.input import QuartzInput
from tests.platform.macos.conftest import DISPLAYS, RETINA, TERMINAL
from tests.platform.macos.fake_api import FakeQuartzApi

CMD, SHIFT, CTRL, ALT = 0x37, 0x38, 0x3B, 0x3A
F_CMD, F_SHIFT, F_CTRL = cg.FLAG_COMMAND, cg.FLAG_SHIFT, cg.FLAG_CONTROL


class Clock:
    """A clock the test advances by hand: no timed assertions."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def mouse(api: FakeQuartzApi) -> list[tuple[int, int, int, int]]:
    """(type, button, click state, flags) of each mouse event."""
    return [
        (e.type, e.button, e.click_state, e.flags) for e in api.events if isinstance(e, MouseEvent)
    ]


def keys(api: FakeQuartzApi) -> list[tuple[int, bool, int, str]]:
    return [(e.keycode, e.down, e.flags, e.text) for e in api.events if isinstance(e, KeyEvent)]


def test_a_move_posts_mouse_moved_at_the_pixel_centre(backend: Backend, api: FakeQuartzApi) -> None:
    backend.input.move(1, 3)
    [event] = api.events
    assert event == MouseEvent(cg.MOUSE_MOVED, 0.75, 1.75, cg.BUTTON_LEFT, 0, 0)
    assert backend.input.cursor_position() == (1, 3)


@pytest.mark.parametrize(
    ("button", "number", "down", "up"),
    [
        (MouseButton.LEFT, cg.BUTTON_LEFT, cg.LEFT_MOUSE_DOWN, cg.LEFT_MOUSE_UP),
        (MouseButton.RIGHT, cg.BUTTON_RIGHT, cg.RIGHT_MOUSE_DOWN, cg.RIGHT_MOUSE_UP),
        (MouseButton.MIDDLE, cg.BUTTON_CENTER, cg.OTHER_MOUSE_DOWN, cg.OTHER_MOUSE_UP),
        # The side buttons: "other" mouse events numbered 3 and 4, as AppKit reports them.
        (MouseButton.BACK, 3, cg.OTHER_MOUSE_DOWN, cg.OTHER_MOUSE_UP),
        (MouseButton.FORWARD, 4, cg.OTHER_MOUSE_DOWN, cg.OTHER_MOUSE_UP),
    ],
)
def test_every_button_clicks_at_the_moved_point(
    backend: Backend, api: FakeQuartzApi, button: MouseButton, number: int, down: int, up: int
) -> None:
    backend.input.click(200, 100, button=button)
    _, press, release = api.events
    assert isinstance(press, MouseEvent)
    assert isinstance(release, MouseEvent)
    assert (press.x, press.y) == (release.x, release.y) == (100.25, 50.25)
    assert mouse(api)[1:] == [(down, number, 1, 0), (up, number, 1, 0)]


@pytest.mark.parametrize("count", [1, 2, 3])
def test_click_count_sets_the_click_state_apps_read(
    backend: Backend, api: FakeQuartzApi, count: int
) -> None:
    backend.input.click(10, 10, count=count)
    states = [state for _, _, state, _ in mouse(api)[1:]]
    assert states == [n for n in range(1, count + 1) for _ in ("down", "up")]


def test_two_single_clicks_stay_single_clicks(backend: Backend, api: FakeQuartzApi) -> None:
    backend.input.click(10, 10)
    backend.input.click(10, 10)
    assert [state for _, _, state, _ in mouse(api) if state] == [1, 1, 1, 1]


def test_raw_presses_count_like_the_system_does() -> None:
    clock = Clock()
    api = FakeQuartzApi(DISPLAYS, double_click_s=0.5)
    driver = QuartzInput(api, clock=clock)
    driver.move(10, 10)

    def press_release() -> int:
        driver.mouse_down(MouseButton.LEFT)
        driver.mouse_up(MouseButton.LEFT)
        last = api.events[-1]
        assert isinstance(last, MouseEvent)
        return last.click_state

    assert press_release() == 1
    clock.now += 0.3
    assert press_release() == 2  # within the interval, same place: a double click
    clock.now += 0.3
    assert press_release() == 3
    clock.now += 0.6
    assert press_release() == 1  # too late: a new series
    driver.move(400, 400)
    assert press_release() == 1  # elsewhere: a new series
    driver.mouse_down(MouseButton.RIGHT)
    driver.mouse_up(MouseButton.RIGHT)
    assert mouse(api)[-1][2] == 1  # another button: a new series


def test_modifiers_are_keys_and_flags_on_every_event(backend: Backend, api: FakeQuartzApi) -> None:
    backend.input.click(10, 10, modifiers=["cmd", "shift"])
    assert keys(api) == [
        (CMD, True, F_CMD, ""),
        (SHIFT, True, F_CMD | F_SHIFT, ""),
        (SHIFT, False, F_CMD, ""),
        (CMD, False, 0, ""),
    ]
    assert [flags for *_, flags in mouse(api)] == [0, F_CMD | F_SHIFT, F_CMD | F_SHIFT]


@pytest.mark.parametrize(
    ("button", "dragged", "number"),
    [
        (MouseButton.LEFT, cg.LEFT_MOUSE_DRAGGED, cg.BUTTON_LEFT),
        (MouseButton.RIGHT, cg.RIGHT_MOUSE_DRAGGED, cg.BUTTON_RIGHT),
        (MouseButton.MIDDLE, cg.OTHER_MOUSE_DRAGGED, cg.BUTTON_CENTER),
        (MouseButton.BACK, cg.OTHER_MOUSE_DRAGGED, 3),
        (MouseButton.FORWARD, cg.OTHER_MOUSE_DRAGGED, 4),
    ],
)
def test_moves_while_a_button_is_held_are_drags(
    backend: Backend, api: FakeQuartzApi, button: MouseButton, dragged: int, number: int
) -> None:
    backend.input.drag([(10, 10), (-1000, 700), (20, -100)], button=button, duration_s=0)
    types = [(kind, b) for kind, b, _, _ in mouse(api)]
    down, up = {
        cg.BUTTON_LEFT: (cg.LEFT_MOUSE_DOWN, cg.LEFT_MOUSE_UP),
        cg.BUTTON_RIGHT: (cg.RIGHT_MOUSE_DOWN, cg.RIGHT_MOUSE_UP),
    }.get(number, (cg.OTHER_MOUSE_DOWN, cg.OTHER_MOUSE_UP))
    assert types == [
        (cg.MOUSE_MOVED, cg.BUTTON_LEFT),
        (down, number),
        (dragged, number),
        (dragged, number),
        (up, number),
    ]
    last = api.events[-1]
    assert isinstance(last, MouseEvent)
    assert (last.x, last.y) == (10.25, -49.75)  # the drag ends on the display above
    assert backend.input.cursor_position() == (20, -100)


@pytest.mark.parametrize(
    ("dx", "dy", "wheels"),
    [
        (0, 2, [(-1, 0), (-1, 0)]),  # down: Quartz's wheel 1 is positive up
        (0, -1, [(1, 0)]),
        (3, 0, [(0, -1)] * 3),  # right: Quartz's wheel 2 is positive left
        (-1, 0, [(0, 1)]),
        (2, -1, [(1, -1), (0, -1)]),  # both axes in two-axis events
    ],
)
def test_scroll_posts_one_line_event_per_notch_at_the_point(
    backend: Backend, api: FakeQuartzApi, dx: int, dy: int, wheels: list[tuple[int, int]]
) -> None:
    backend.input.scroll(-960, 740, dx, dy)
    scrolls = [e for e in api.events if isinstance(e, ScrollEvent)]
    assert [(e.vertical, e.horizontal) for e in scrolls] == wheels
    assert {(e.x, e.y) for e in scrolls} == {(-959.5, 640.5)}


@pytest.mark.parametrize(
    ("name", "keycode", "flags"),
    [
        ("enter", 0x24, 0),
        ("tab", 0x30, 0),
        ("space", 0x31, 0),
        ("backspace", 0x33, 0),
        ("delete", 0x75, cg.FLAG_SECONDARY_FN),
        ("escape", 0x35, 0),
        ("left", 0x7B, cg.FLAG_NUMERIC_PAD | cg.FLAG_SECONDARY_FN),
        ("up", 0x7E, cg.FLAG_NUMERIC_PAD | cg.FLAG_SECONDARY_FN),
        ("home", 0x73, cg.FLAG_SECONDARY_FN),
        ("pagedown", 0x79, cg.FLAG_SECONDARY_FN),
        ("insert", 0x72, cg.FLAG_SECONDARY_FN),
        ("f1", 0x7A, cg.FLAG_SECONDARY_FN),
        ("f20", 0x5A, cg.FLAG_SECONDARY_FN),
        ("menu", 0x6E, 0),
        ("capslock", 0x39, 0),
    ],
)
def test_named_keys_post_their_virtual_keycodes(
    backend: Backend, api: FakeQuartzApi, name: str, keycode: int, flags: int
) -> None:
    backend.input.key_chord([name])
    assert keys(api) == [(keycode, True, flags, ""), (keycode, False, flags, "")]


def test_function_keys_past_f20_are_refused_clearly(backend: Backend, api: FakeQuartzApi) -> None:
    with pytest.raises(InputError, match="Mac keyboards stop at F20"):
        backend.input.key_down("f21")
    assert api.events == []


def test_a_chord_presses_keys_in_order_and_releases_in_reverse(
    backend: Backend, api: FakeQuartzApi
) -> None:
    backend.input.key_chord(["ctrl", "alt", "c"])
    f_alt = cg.FLAG_ALTERNATE
    assert keys(api) == [
        (CTRL, True, F_CTRL, ""),
        (ALT, True, F_CTRL | f_alt, ""),
        (0x08, True, F_CTRL | f_alt, ""),
        (0x08, False, F_CTRL | f_alt, ""),
        (ALT, False, F_CTRL, ""),
        (CTRL, False, 0, ""),
    ]


def test_a_capital_letter_presses_shift_unless_held(backend: Backend, api: FakeQuartzApi) -> None:
    backend.input.key_chord(["A"])
    assert keys(api) == [
        (SHIFT, True, F_SHIFT, ""),
        (0x00, True, F_SHIFT, ""),
        (0x00, False, F_SHIFT, ""),
        (SHIFT, False, 0, ""),
    ]
    api.events.clear()
    backend.input.key_chord(["shift", "A"])
    assert [k for k, *_ in keys(api)] == [SHIFT, 0x00, 0x00, SHIFT]


def test_a_modifier_released_early_is_not_resurrected(backend: Backend, api: FakeQuartzApi) -> None:
    backend.input.key_down("cmd")
    backend.input.key_down("v")
    backend.input.key_up("cmd")
    backend.input.key_up("v")
    assert keys(api)[-1] == (0x09, False, 0, "")


def test_the_current_layout_beats_the_us_table() -> None:
    # AZERTY: "a" is where US has "q", and "q" where US has "a".
    api = FakeQuartzApi(DISPLAYS, layout={"a": (0x0C, 0), "q": (0x00, 0), "A": (0x0C, F_SHIFT)})
    driver = quartz.create(api=api, host=TERMINAL).input
    driver.key_chord(["cmd", "a"])  # select all, not quit
    assert [k for k, *_ in keys(api)] == [CMD, 0x0C, 0x0C, CMD]


def test_a_character_without_a_key_is_sent_as_its_text(
    backend: Backend, api: FakeQuartzApi
) -> None:
    backend.input.key_chord(["é"])
    assert keys(api) == [(0, True, 0, "é"), (0, False, 0, "é")]


def test_a_character_without_a_key_refuses_modifiers(backend: Backend, api: FakeQuartzApi) -> None:
    with pytest.raises(InputError, match=r"cannot press meta\+é"):
        backend.input.key_chord(["cmd", "é"])
    assert backend.input.held() == ((), ())  # cmd released again
    assert keys(api)[-1] == (CMD, False, 0, "")


def test_text_goes_in_chunks_of_at_most_20_utf16_units(
    backend: Backend, api: FakeQuartzApi
) -> None:
    backend.input.type_text("x" * 45)
    downs = [text for _, down, _, text in keys(api) if down]
    assert downs == ["x" * 20, "x" * 20, "x" * 5]
    assert keys(api)[:2] == [(0, True, 0, "x" * 20), (0, False, 0, "x" * 20)]


def test_surrogate_pairs_and_emoji_are_never_split(backend: Backend, api: FakeQuartzApi) -> None:
    text = "a" * 19 + "😀" + "👍🏽" * 6  # 👍🏽 is two code points, four UTF-16 units
    backend.input.type_text(text)
    downs = [text for _, down, _, text in keys(api) if down]
    assert downs == ["a" * 19, "😀" + "👍🏽" * 4, "👍🏽" * 2]
    assert "".join(downs) == text


def test_line_breaks_and_tabs_are_their_keys(backend: Backend, api: FakeQuartzApi) -> None:
    backend.input.type_text("one\r\ntwo\tthree\n")
    assert keys(api) == [
        (0, True, 0, "one"),
        (0, False, 0, "one"),
        (0x24, True, 0, ""),
        (0x24, False, 0, ""),
        (0, True, 0, "two"),
        (0, False, 0, "two"),
        (0x30, True, 0, ""),
        (0x30, False, 0, ""),
        (0, True, 0, "three"),
        (0, False, 0, "three"),
        (0x24, True, 0, ""),
        (0x24, False, 0, ""),
    ]


def test_text_ignores_held_modifiers(backend: Backend, api: FakeQuartzApi) -> None:
    backend.input.key_down("cmd")
    backend.input.type_text("q")
    assert keys(api)[1:] == [(0, True, 0, "q"), (0, False, 0, "q")]


def test_a_smaller_chunk_serves_apps_that_keep_one_character_per_event() -> None:
    api = FakeQuartzApi(DISPLAYS)
    driver = quartz.create(api=api, host=TERMINAL, text_chunk_units=2).input
    driver.type_text("ab😀")
    assert [text for _, down, _, text in keys(api) if down] == ["ab", "😀"]
    with pytest.raises(ValueError, match="text_chunk_units must be 2 to 20"):
        QuartzInput(api, text_chunk_units=21)


def test_untypable_text_posts_nothing(backend: Backend, api: FakeQuartzApi) -> None:
    with pytest.raises(InputError, match="control character"):
        backend.input.type_text("fine\x00")
    assert api.events == []


def test_release_all_lets_go_of_everything(backend: Backend, api: FakeQuartzApi) -> None:
    backend.input.key_down("shift")
    backend.input.key_down("x")
    backend.input.mouse_down(MouseButton.LEFT)
    api.events.clear()
    backend.input.release_all()
    assert mouse(api) == [(cg.LEFT_MOUSE_UP, cg.BUTTON_LEFT, 1, F_SHIFT)]
    assert keys(api) == [(0x07, False, F_SHIFT, ""), (SHIFT, False, 0, "")]
    backend.input.move(5, 5)
    assert mouse(api)[-1] == (cg.MOUSE_MOVED, cg.BUTTON_LEFT, 0, 0)  # not a drag, no flags


def test_the_first_press_without_a_move_uses_the_pointer_location() -> None:
    api = FakeQuartzApi((RETINA,))
    api.location = (33.5, 44.0)
    driver = QuartzInput(api)
    driver.mouse_down(MouseButton.LEFT)
    [event] = api.events
    assert isinstance(event, MouseEvent)
    assert (event.x, event.y) == (33.5, 44.0)
