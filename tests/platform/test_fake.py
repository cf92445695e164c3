"""The fake backend, and through it the composite actions every backend shares."""

from __future__ import annotations

import pytest
from PIL import Image

from holodesk.platform.backends.fake import (
    Button,
    FakeBackend,
    FakeInput,
    Key,
    Move,
    Scroll,
    Text,
    create,
)
from holodesk.platform.base import DisplayInfo, MouseButton, Region
from holodesk.platform.errors import InputError, UnknownKeyError

LEFT, RIGHT = MouseButton.LEFT, MouseButton.RIGHT

TWO_DISPLAYS = (
    DisplayInfo("left", Region(-1920, 0, 1920, 1080), scale_factor=1.0, name="left"),
    DisplayInfo("main", Region(0, 0, 2560, 1600), scale_factor=2.0, primary=True, name="main"),
)


@pytest.fixture
def fake() -> FakeBackend:
    return create()


@pytest.fixture
def driver(fake: FakeBackend) -> FakeInput:
    return fake.input


def test_displays_primary_first_with_negative_origins() -> None:
    backend = create(displays=TWO_DISPLAYS, image=Image.new("RGB", (4480, 1600)))
    displays = backend.screen.displays()
    assert [d.display_id for d in displays] == ["main", "left"]
    assert displays[0].scale_factor == 2.0
    assert backend.screen.virtual_desktop() == Region(-1920, 0, 4480, 1600)


def test_grab_crops_the_desktop_image_in_desktop_coordinates() -> None:
    desktop = Image.new("RGB", (4480, 1600), (0, 0, 0))
    desktop.paste((255, 0, 0), (1900, 10, 1930, 20))  # straddles x = 0
    backend = create(displays=TWO_DISPLAYS, image=desktop)
    crop = backend.screen.grab(Region(-20, 10, 30, 10))
    assert crop.size == (30, 10)
    assert crop.getpixel((0, 0)) == (255, 0, 0)
    assert crop.getpixel((29, 9)) == (255, 0, 0)
    assert backend.screen.grab(Region(-21, 10, 1, 1)).getpixel((0, 0)) == (0, 0, 0)
    assert backend.screen.grabs[0] == Region(-20, 10, 30, 10)


def test_default_image_is_a_pattern_so_wrong_crops_show(fake: FakeBackend) -> None:
    a = fake.screen.grab(Region(0, 0, 8, 8))
    b = fake.screen.grab(Region(1, 0, 8, 8))
    assert a.tobytes() != b.tobytes()
    assert a.mode == "RGB"


@pytest.mark.parametrize(
    "region", [Region(1270, 0, 20, 20), Region(-1, 0, 5, 5), Region(0, 0, 0, 5)]
)
def test_grab_outside_or_empty_is_refused(fake: FakeBackend, region: Region) -> None:
    with pytest.raises(ValueError, match="inside"):
        fake.screen.grab(region)


def test_image_must_cover_the_desktop() -> None:
    with pytest.raises(ValueError, match="virtual desktop is 4480x1600"):
        create(displays=TWO_DISPLAYS, image=Image.new("RGB", (10, 10)))


def test_negative_region_size_is_refused() -> None:
    with pytest.raises(ValueError, match="negative size"):
        Region(0, 0, -1, 5)


@pytest.mark.parametrize("count", [1, 2, 3])
def test_click_counts(driver: FakeInput, count: int) -> None:
    driver.click(10, 20, RIGHT, count=count)
    assert driver.events == [Move(10, 20)] + [Button(RIGHT, True), Button(RIGHT, False)] * count
    assert driver.held() == ((), ())


@pytest.mark.parametrize("count", [0, 4, -1])
def test_click_count_out_of_contract_is_refused(driver: FakeInput, count: int) -> None:
    with pytest.raises(ValueError, match="1, 2 or 3"):
        driver.click(10, 20, count=count)
    assert driver.events == []


def test_click_holds_modifiers_around_the_clicks(driver: FakeInput) -> None:
    driver.click(5, 6, modifiers=["Control", "shift"])
    assert driver.events == [
        Move(5, 6),
        Key("ctrl", True),
        Key("shift", True),
        Button(LEFT, True),
        Button(LEFT, False),
        Key("shift", False),
        Key("ctrl", False),
    ]


def test_drag_presses_moves_along_the_path_and_releases(driver: FakeInput) -> None:
    driver.drag([(0, 0), (5, 5), (10, 10)], modifiers=["alt"], duration_s=0)
    assert driver.events == [
        Move(0, 0),
        Key("alt", True),
        Button(LEFT, True),
        Move(5, 5),
        Move(10, 10),
        Button(LEFT, False),
        Key("alt", False),
    ]


def test_drag_needs_two_points(driver: FakeInput) -> None:
    with pytest.raises(ValueError, match="two points"):
        driver.drag([(0, 0)])


def test_failed_drag_still_releases_the_button(driver: FakeInput) -> None:
    driver.move(0, 0)
    driver.clear()
    driver.fail_on = {Move}
    with pytest.raises(InputError):
        driver.drag([(0, 0), (5, 5)], duration_s=0)
    driver.fail_on = set()
    driver.drag([(0, 0), (5, 5)], duration_s=0)
    assert driver.held() == ((), ())


def test_scroll_moves_then_scrolls(driver: FakeInput) -> None:
    driver.scroll(30, 40, dx=-1, dy=3)
    assert driver.events == [Move(30, 40), Scroll(-1, 3)]


def test_key_chord_releases_in_reverse(driver: FakeInput) -> None:
    driver.key_chord(["ctrl", "Shift", "T"])
    assert driver.events == [
        Key("ctrl", True),
        Key("shift", True),
        Key("T", True),
        Key("T", False),
        Key("shift", False),
        Key("ctrl", False),
    ]


def test_key_chord_releases_what_it_pressed_when_a_key_fails(driver: FakeInput) -> None:
    with pytest.raises(UnknownKeyError):
        driver.key_chord(["ctrl", "hyper"])
    # The unknown key is caught before anything is pressed.
    assert driver.events == []
    assert driver.held() == ((), ())


def test_key_down_up_track_held_keys_by_canonical_name(driver: FakeInput) -> None:
    driver.key_down("Control")
    driver.key_down("ctrl")  # auto-repeat, still one held key
    assert driver.held() == (("ctrl",), ())
    driver.key_up("control")
    assert driver.held() == ((), ())
    assert driver.events == [Key("ctrl", True), Key("ctrl", True), Key("ctrl", False)]


def test_release_all_releases_buttons_then_keys(driver: FakeInput) -> None:
    driver.key_down("shift")
    driver.key_down("a")
    driver.mouse_down(LEFT)
    driver.mouse_down(RIGHT)
    driver.clear()
    driver.release_all()
    assert driver.events == [
        Button(RIGHT, False),
        Button(LEFT, False),
        Key("a", False),
        Key("shift", False),
    ]
    assert driver.held() == ((), ())


def test_release_all_keeps_going_when_a_release_fails(driver: FakeInput) -> None:
    driver.key_down("shift")
    driver.mouse_down(LEFT)
    driver.clear()
    driver.fail_on = {Button}
    with pytest.raises(InputError, match="releasing held input failed"):
        driver.release_all()
    assert driver.events == [Key("shift", False)]
    assert driver.held() == ((), ())


def test_close_releases_everything(fake: FakeBackend) -> None:
    fake.input.key_down("meta")
    fake.close()
    assert fake.input.events[-1] == Key("meta", False)


def test_type_text_is_recorded_verbatim(driver: FakeInput) -> None:
    driver.type_text("héllo wörld ñ € 日本")
    assert driver.events == [Text("héllo wörld ñ € 日本")]


def test_cursor_follows_moves(driver: FakeInput) -> None:
    driver.move(100, 200)
    assert driver.cursor_position() == (100, 200)


@pytest.mark.parametrize("point", [(1280, 0), (0, -1), (-5, 5)])
def test_moving_off_the_desktop_is_refused(driver: FakeInput, point: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="outside the virtual desktop"):
        driver.move(*point)
    assert driver.events == []


def test_negative_origins_are_on_the_desktop() -> None:
    backend = create(displays=TWO_DISPLAYS, image=Image.new("RGB", (4480, 1600)))
    backend.input.click(-1900, 500)
    assert backend.input.events[0] == Move(-1900, 500)
