"""Which input field belongs to a label, on rendered forms."""

from __future__ import annotations

import pytest
from PIL import Image, ImageDraw

from holodesk.daemon.policies.ocr.fields import find_field

from .screens import Box, Screen, form_screen, tk_like_screen

# The detected box is the field's inside or outside edge of its border.
TOLERANCE_PX = 3

SCREENS = {
    "form 1280x800": lambda: form_screen(),
    "form 1024x640": lambda: form_screen().resized(1024, 640),
    "tk 900x520": lambda: tk_like_screen(),
    "tk 720x416": lambda: tk_like_screen().resized(720, 416),
}


@pytest.fixture(params=list(SCREENS))
def screen(request: pytest.FixtureRequest) -> Screen:
    return SCREENS[request.param]()


def _close(found: Box, expected: Box) -> bool:
    return all(abs(a - b) <= TOLERANCE_PX for a, b in zip(found, expected, strict=True))


def test_each_label_finds_its_own_field(screen: Screen) -> None:
    for label, field in screen.fields.items():
        found = find_field(screen.image, screen.texts[label])
        assert found is not None, label
        assert _close(found, field), (label, found, field)


def test_text_on_a_button_has_no_field(screen: Screen) -> None:
    for text in screen.buttons:
        assert find_field(screen.image, screen.texts[text]) is None, text


def test_plain_text_with_nothing_beside_it_has_no_field() -> None:
    screen = form_screen()
    assert find_field(screen.image, screen.texts["Customer details"]) is None
    assert find_field(screen.image, screen.texts["File"]) is None


def test_the_nearer_of_two_fields_to_the_right_wins() -> None:
    image = Image.new("RGB", (900, 200), (240, 240, 240))
    draw = ImageDraw.Draw(image)
    label = (20, 90, 80, 104)
    draw.rectangle(label, fill=(0, 0, 0))  # stands in for the label's ink
    draw.rectangle((100, 82, 300, 112), fill="white", outline=(120, 120, 120))
    draw.rectangle((400, 82, 700, 112), fill="white", outline=(120, 120, 120))
    found = find_field(image, label)
    assert found is not None
    assert _close(found, (100, 82, 300, 112))


def test_a_borderless_filled_field_is_found() -> None:
    image = Image.new("RGB", (900, 200), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    label = (20, 90, 80, 104)
    draw.rectangle(label, fill=(0, 0, 0))
    draw.rectangle((120, 80, 500, 114), fill=(228, 232, 240))
    found = find_field(image, label)
    assert found is not None
    assert _close(found, (120, 80, 500, 114))
