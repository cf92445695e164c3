"""WinInput builds the exact SendInput records for every action.

Windows cannot run here: FakeWinApi (tests/platform/windows/fake_api.py) stands in
for the OS calls and records every INPUT, which these tests read back field by field.
"""

from __future__ import annotations

import pytest

from holodesk.platform.base import Backend, MouseButton
from holodesk.platform.errors import InputError
from holodesk.platform.windows import events
from holodesk.platform.windows import structs as s
from holodesk.platform.windows.coords import from_normalized_floor, from_normalized_scaled
from holodesk.platform.windows.input import TEXT_BATCH
from tests.platform.windows.fake_api import FakeWinApi, describe

MOVE = events.MOVE_FLAGS
CTRL, SHIFT, ENTER, TAB = (
    ("key", 0x11, 0x1D),
    ("key", 0x10, 0x2A),
    ("key", 0x0D, 0x1C),
    ("key", 0x09, 0x0F),
)


def sent(api: FakeWinApi) -> list[tuple[object, ...]]:
    return [describe(event) for event in api.sent]


def key(code: tuple[object, ...], updown: str, extended: str = "") -> tuple[object, ...]:
    return (*code, updown, extended)


def unicode(unit: int, updown: str) -> tuple[object, ...]:
    return ("unicode", unit, updown)


def mouse(flags: int, data: int = 0) -> tuple[object, ...]:
    return ("mouse", 0, 0, data, flags)


def test_moves_are_absolute_over_the_virtual_desktop(backend: Backend, api: FakeWinApi) -> None:
    backend.input.move(-1920, 1619)  # the bottom-left pixel of the left monitor
    [event] = api.sent
    assert event.type == s.INPUT_MOUSE
    assert event.mi.dwFlags == s.MOUSEEVENTF_MOVE | s.MOUSEEVENTF_ABSOLUTE | (
        s.MOUSEEVENTF_VIRTUALDESK | s.MOUSEEVENTF_MOVE_NOCOALESCE
    )
    screen = api.virtual_screen()
    assert (screen.x, screen.y, screen.width, screen.height) == (-1920, -1440, 5760, 3600)
    for decode in (from_normalized_floor, from_normalized_scaled):
        assert decode(event.mi.dx, screen.x, screen.width) == -1920
        assert decode(event.mi.dy, screen.y, screen.height) == 1619
    assert backend.input.cursor_position() == (-1920, 1619)


def test_a_point_on_no_monitor_is_refused_before_sending(backend: Backend, api: FakeWinApi) -> None:
    # Inside the virtual screen's bounding box, but in the gap above the left monitor.
    with pytest.raises(ValueError, match=r"\(-100, 100\) is on no monitor"):
        backend.input.move(-100, 100)
    assert api.sent == []


@pytest.mark.parametrize(
    ("button", "down", "up", "data"),
    [
        (MouseButton.LEFT, s.MOUSEEVENTF_LEFTDOWN, s.MOUSEEVENTF_LEFTUP, 0),
        (MouseButton.RIGHT, s.MOUSEEVENTF_RIGHTDOWN, s.MOUSEEVENTF_RIGHTUP, 0),
        (MouseButton.MIDDLE, s.MOUSEEVENTF_MIDDLEDOWN, s.MOUSEEVENTF_MIDDLEUP, 0),
        # The side buttons: X events, mouseData naming XBUTTON1 (back) or XBUTTON2 (forward).
        (MouseButton.BACK, s.MOUSEEVENTF_XDOWN, s.MOUSEEVENTF_XUP, s.XBUTTON1),
        (MouseButton.FORWARD, s.MOUSEEVENTF_XDOWN, s.MOUSEEVENTF_XUP, s.XBUTTON2),
    ],
)
def test_every_button_clicks_where_it_moved(
    backend: Backend, api: FakeWinApi, button: MouseButton, down: int, up: int, data: int
) -> None:
    backend.input.click(100, 200, button=button)
    move, press, release = sent(api)
    assert move[4] == MOVE
    assert api.cursor == (100, 200)
    assert press == mouse(down, data)
    assert release == mouse(up, data)


@pytest.mark.parametrize(("button", "data"), [(events.WinButton.X1, 1), (events.WinButton.X2, 2)])
def test_x_buttons_name_themselves_in_mouse_data(button: events.WinButton, data: int) -> None:
    assert describe(events.button(button, True)) == mouse(s.MOUSEEVENTF_XDOWN, data)
    assert describe(events.button(button, False)) == mouse(s.MOUSEEVENTF_XUP, data)


def test_a_triple_click_is_three_rapid_presses_at_one_point(
    backend: Backend, api: FakeWinApi
) -> None:
    # Windows counts double clicks itself (same spot, within GetDoubleClickTime).
    backend.input.click(10, 10, count=3)
    assert (
        sent(api)[1:]
        == [
            mouse(s.MOUSEEVENTF_LEFTDOWN),
            mouse(s.MOUSEEVENTF_LEFTUP),
        ]
        * 3
    )
    assert [describe(e)[4] for e in api.sent].count(MOVE) == 1


def test_modifiers_wrap_the_click(backend: Backend, api: FakeWinApi) -> None:
    backend.input.click(10, 10, modifiers=["ctrl", "Shift"])
    assert sent(api)[1:] == [
        key(CTRL, "down"),
        key(SHIFT, "down"),
        mouse(s.MOUSEEVENTF_LEFTDOWN),
        mouse(s.MOUSEEVENTF_LEFTUP),
        key(SHIFT, "up"),
        key(CTRL, "up"),
    ]
    assert backend.input.held() == ((), ())


def test_a_drag_holds_the_button_across_every_point(backend: Backend, api: FakeWinApi) -> None:
    path = [(-1900, 600), (0, 0), (700, -1400)]  # across three monitors
    backend.input.drag(path, duration_s=0)
    kinds = [describe(e)[4] for e in api.sent]
    assert kinds == [MOVE, s.MOUSEEVENTF_LEFTDOWN, MOVE, MOVE, s.MOUSEEVENTF_LEFTUP]
    assert api.cursor == (700, -1400)


@pytest.mark.parametrize(
    ("dx", "dy", "expected"),
    [
        (0, 2, [(s.MOUSEEVENTF_WHEEL, -120)] * 2),  # down: towards the user
        (0, -1, [(s.MOUSEEVENTF_WHEEL, 120)]),  # up
        (3, 0, [(s.MOUSEEVENTF_HWHEEL, 120)] * 3),  # right
        (-1, 0, [(s.MOUSEEVENTF_HWHEEL, -120)]),  # left
        (-1, 1, [(s.MOUSEEVENTF_WHEEL, -120), (s.MOUSEEVENTF_HWHEEL, -120)]),
    ],
)
def test_scroll_sends_one_wheel_delta_per_notch(
    backend: Backend, api: FakeWinApi, dx: int, dy: int, expected: list[tuple[int, int]]
) -> None:
    backend.input.scroll(50, 60, dx, dy)
    _, *wheel = api.sent
    assert api.cursor == (50, 60)
    assert [(int(e.mi.dwFlags), s.signed_mouse_data(e)) for e in wheel] == expected
    assert api.batches[-1] == len(expected)  # all notches in one atomic SendInput


def test_no_scroll_sends_nothing_after_the_move(backend: Backend, api: FakeWinApi) -> None:
    backend.input.scroll(50, 60, 0, 0)
    assert len(api.sent) == 1


@pytest.mark.parametrize(
    ("name", "vk", "scan"),
    [
        ("up", 0x26, 0x48),
        ("down", 0x28, 0x50),
        ("left", 0x25, 0x4B),
        ("right", 0x27, 0x4D),
        ("home", 0x24, 0x47),
        ("end", 0x23, 0x4F),
        ("pageup", 0x21, 0x49),
        ("pagedown", 0x22, 0x51),
        ("insert", 0x2D, 0x52),
        ("delete", 0x2E, 0x53),
        ("meta", 0x5B, 0x5B),
        ("menu", 0x5D, 0),
        ("printscreen", 0x2C, 0),
    ],
)
def test_extended_keys_carry_the_extended_flag(
    backend: Backend, api: FakeWinApi, name: str, vk: int, scan: int
) -> None:
    backend.input.key_chord([name])
    assert sent(api) == [("key", vk, scan, "down", "extended"), ("key", vk, scan, "up", "extended")]


@pytest.mark.parametrize(
    ("name", "vk"),
    [
        ("enter", 0x0D),
        ("ctrl", 0x11),
        ("alt", 0x12),
        ("shift", 0x10),
        ("f1", 0x70),
        ("f24", 0x87),
        ("escape", 0x1B),
        ("tab", 0x09),
        ("backspace", 0x08),
        ("capslock", 0x14),
        ("space", 0x20),
    ],
)
def test_main_block_keys_are_not_extended(
    backend: Backend, api: FakeWinApi, name: str, vk: int
) -> None:
    backend.input.key_down(name)
    [event] = sent(api)
    assert event[1] == vk
    assert event[3:] == ("down", "")


def test_a_chord_with_a_letter_uses_its_virtual_key(backend: Backend, api: FakeWinApi) -> None:
    backend.input.key_chord(["Control", "c"])
    assert sent(api) == [
        key(CTRL, "down"),
        ("key", 0x43, 0x2E, "down", ""),
        ("key", 0x43, 0x2E, "up", ""),
        key(CTRL, "up"),
    ]


def test_a_capital_letter_adds_shift_unless_shift_is_held(
    backend: Backend, api: FakeWinApi
) -> None:
    backend.input.key_chord(["A"])
    assert sent(api) == [
        key(SHIFT, "down"),
        ("key", 0x41, 0x1E, "down", ""),
        ("key", 0x41, 0x1E, "up", ""),
        key(SHIFT, "up"),
    ]
    api.sent.clear()
    backend.input.key_chord(["shift", "A"])
    assert sent(api) == [
        key(SHIFT, "down"),
        ("key", 0x41, 0x1E, "down", ""),
        ("key", 0x41, 0x1E, "up", ""),
        key(SHIFT, "up"),
    ]


def test_auto_repeat_presses_the_key_again_without_another_shift(
    backend: Backend, api: FakeWinApi
) -> None:
    backend.input.key_down("A")
    backend.input.key_down("A")
    backend.input.key_up("A")
    assert sent(api) == [
        key(SHIFT, "down"),
        ("key", 0x41, 0x1E, "down", ""),
        ("key", 0x41, 0x1E, "down", ""),
        ("key", 0x41, 0x1E, "up", ""),
        key(SHIFT, "up"),
    ]


def test_characters_without_a_plain_key_go_as_unicode(backend: Backend, api: FakeWinApi) -> None:
    backend.input.key_chord(["€"])  # AltGr+E on this layout: not pressed as Ctrl+Alt+E
    backend.input.key_chord(["😀"])  # no key at all; outside the BMP
    assert sent(api) == [
        unicode(0x20AC, "down"),
        unicode(0x20AC, "up"),
        unicode(0xD83D, "down"),
        unicode(0xDE00, "down"),
        unicode(0xD83D, "up"),
        unicode(0xDE00, "up"),
    ]


def test_releasing_a_key_never_pressed_still_releases_it(backend: Backend, api: FakeWinApi) -> None:
    backend.input.key_up("A")
    assert sent(api) == [("key", 0x41, 0x1E, "up", "")]


def test_text_is_unicode_units_with_keys_for_line_breaks_and_tabs(
    backend: Backend, api: FakeWinApi
) -> None:
    backend.input.type_text("é😀\r\nb\tc")
    assert sent(api) == [
        unicode(0xE9, "down"),
        unicode(0xE9, "up"),
        unicode(0xD83D, "down"),  # a surrogate pair is two units, high then low
        unicode(0xD83D, "up"),
        unicode(0xDE00, "down"),
        unicode(0xDE00, "up"),
        key(ENTER, "down"),  # "\r\n" is one Enter
        key(ENTER, "up"),
        unicode(ord("b"), "down"),
        unicode(ord("b"), "up"),
        key(TAB, "down"),
        key(TAB, "up"),
        unicode(ord("c"), "down"),
        unicode(ord("c"), "up"),
    ]


def test_shell_hostile_text_arrives_verbatim(backend: Backend, api: FakeWinApi) -> None:
    text = "$(rm -rf /) `x` 'q' \"d\" \\ %PATH% ^&|<>"
    backend.input.type_text(text)
    units = [e.ki.wScan for e in api.sent if not e.ki.dwFlags & s.KEYEVENTF_KEYUP]
    assert "".join(chr(u) for u in units) == text


def test_long_text_goes_in_bounded_batches(backend: Backend, api: FakeWinApi) -> None:
    backend.input.type_text("x" * 100)
    assert api.batches == [TEXT_BATCH] * 3 + [200 - 3 * TEXT_BATCH]
    assert len(api.sent) == 200


def test_text_with_an_untypable_character_sends_nothing(backend: Backend, api: FakeWinApi) -> None:
    with pytest.raises(InputError, match="control character U\\+0007"):
        backend.input.type_text("ok\x07")
    assert api.sent == []


def test_release_all_lets_go_of_keys_and_buttons(backend: Backend, api: FakeWinApi) -> None:
    backend.input.key_down("ctrl")
    backend.input.mouse_down(MouseButton.RIGHT)
    api.sent.clear()
    backend.input.release_all()
    assert sent(api) == [mouse(s.MOUSEEVENTF_RIGHTUP), key(CTRL, "up")]
    assert backend.input.held() == ((), ())


def test_blocked_input_raises_and_is_not_marked_held(backend: Backend, api: FakeWinApi) -> None:
    api.accept = 0
    api.error = 5
    api.foreground_is_elevated = True
    with pytest.raises(InputError) as raised:
        backend.input.key_down("ctrl")
    message = str(raised.value)
    assert "Windows accepted 0 of 1 input events" in message
    assert "elevated" in message
    assert "UIPI" in message
    assert "highest privileges" in message
    assert backend.input.held() == ((), ())


def test_blocked_input_on_the_secure_desktop_says_so(backend: Backend, api: FakeWinApi) -> None:
    api.accept = 0
    api.desktop = None
    with pytest.raises(InputError, match="locked or the secure desktop is up"):
        backend.input.click(10, 10)
