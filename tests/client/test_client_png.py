"""Indexed PNG for frames (png.py): used only when exact, always decodes to the same
RGB pixels, and smaller than RGB on screen-like images."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageDraw, ImageFont

from holodesk.client.capture import encode
from holodesk.values import png
from holodesk.values.encoding import ImageEncoding
from holodesk.values.png import encode_png, exact_palette


def decoded(data: bytes) -> tuple[str, np.ndarray]:
    with Image.open(io.BytesIO(data)) as image:
        return image.mode, np.asarray(image.convert("RGB"))


def image_with_colours(width: int, height: int, colours: int, seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    palette = rng.integers(0, 256, size=(colours, 3), dtype=np.uint8)
    return Image.fromarray(palette[rng.integers(0, colours, size=(height, width))], "RGB")


@settings(max_examples=40, deadline=None)
@given(
    width=st.integers(1, 90),
    height=st.integers(1, 60),
    colours=st.integers(1, 256),
    seed=st.integers(0, 2**32 - 1),
)
def test_images_of_up_to_256_colours_go_out_indexed_and_exact(
    width: int, height: int, colours: int, seed: int
) -> None:
    image = image_with_colours(width, height, colours, seed)
    mode, pixels = decoded(encode_png(image))
    assert mode == "P"
    assert np.array_equal(pixels, np.asarray(image))


@settings(max_examples=10, deadline=None)
@given(colours=st.integers(1, 256), seed=st.integers(0, 2**32 - 1))
def test_screen_sized_images_go_out_indexed_and_exact(colours: int, seed: int) -> None:
    image = image_with_colours(700, 500, colours, seed)
    mode, pixels = decoded(encode_png(image))
    assert mode == "P"
    assert np.array_equal(pixels, np.asarray(image))


@pytest.mark.parametrize("multipliers", [(), (0,)], ids=["no hash", "every colour in one slot"])
def test_indexing_is_exact_when_no_hash_separates_the_colours(
    multipliers: tuple[int, ...],
) -> None:
    # White box: the slot-per-colour table that takes over when every hash collides.
    image = np.asarray(image_with_colours(300, 200, 256, seed=7))
    values = np.unique(png._rgb24(image))
    indices = png._indices_of(png._rgb24(image), values, multipliers)
    assert np.array_equal(values[indices], png._rgb24(image))


@settings(max_examples=15, deadline=None)
@given(extra=st.integers(1, 500), red=st.integers(0, 255))
def test_images_of_more_colours_go_out_as_rgb_and_exact(extra: int, red: int) -> None:
    count = 256 + extra  # one pixel per colour, every colour distinct
    index = np.arange(count)
    rgb = np.stack([np.full(count, red), index // 256, index % 256], axis=-1).astype(np.uint8)
    image = Image.fromarray(rgb.reshape(1, count, 3), "RGB")
    mode, pixels = decoded(encode_png(image))
    assert mode == "RGB"
    assert np.array_equal(pixels, np.asarray(image))


def test_other_modes_are_encoded_as_they_are() -> None:
    gray = Image.new("L", (20, 10), 128)
    assert exact_palette(gray) is None
    mode, _ = decoded(encode_png(gray))
    assert mode == "L"


def screen_like(width: int = 640, height: int = 400) -> Image.Image:
    """Flat UI colours and anti-aliased text, as an app draws them."""
    image = Image.new("RGB", (width, height), (246, 246, 248))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, width, 28), fill=(40, 44, 52))
    draw.rectangle((20, 60, 220, 90), fill=(255, 255, 255), outline=(120, 120, 130))
    font = ImageFont.load_default(size=13)
    words = "the quick brown fox jumps over the lazy dog report budget meeting "
    for row in range(8, 24):
        draw.text((240, row * 15), words * 2, fill=(30, 30, 30), font=font)
    return image


def test_a_screen_with_few_colours_is_smaller_indexed_and_decodes_identically() -> None:
    screen = screen_like()
    rgb = io.BytesIO()
    screen.save(rgb, "PNG", compress_level=6)
    indexed = encode(screen, ImageEncoding.PNG, quality=0)
    mode, pixels = decoded(indexed)
    assert mode == "P"
    assert np.array_equal(pixels, np.asarray(screen))
    assert len(indexed) < len(rgb.getvalue()) * 0.7


def indexed(image: Image.Image) -> Image.Image:
    """The image as the daemon holds a frame the client sent: an indexed PNG, decoded."""
    with Image.open(io.BytesIO(encode_png(image))) as opened:
        opened.load()
        assert opened.mode == "P"
        return opened


@settings(max_examples=60, deadline=None)
@given(
    base_colours=st.integers(1, 256),
    patch_colours=st.integers(1, 300),
    shared=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_painting_on_an_indexed_image_is_exact_or_leaves_it_alone(
    base_colours: int, patch_colours: int, shared: bool, seed: int, data: st.DataObject
) -> None:
    base = image_with_colours(60, 40, base_colours, seed)
    # A patch of the base's own pixels (a caret moving) or of new colours (a dialog).
    width, height = data.draw(st.integers(1, 60)), data.draw(st.integers(1, 40))
    x, y = data.draw(st.integers(0, 60 - width)), data.draw(st.integers(0, 40 - height))
    if shared:
        patch = base.crop((0, 0, width, height)).transpose(Image.Transpose.ROTATE_180)
    else:
        patch = image_with_colours(width, height, patch_colours, seed + 1)
    canvas = indexed(base)
    before = canvas.tobytes(), canvas.getpalette()
    expected = base.copy()
    expected.paste(patch, (x, y))
    painted = png.paint_indexed(canvas, patch, (x, y))
    if shared:  # no new colour: always painted in the palette
        assert painted
    if painted:
        assert canvas.mode == "P"
        assert np.array_equal(np.asarray(canvas.convert("RGB")), np.asarray(expected))
    else:  # only when the colours would not fit one palette
        assert (canvas.tobytes(), canvas.getpalette()) == before
        assert base_colours + len(patch.getcolors(1 << 24) or []) > png.MAX_PALETTE


def test_an_indexed_image_with_transparency_is_not_painted_in_its_palette() -> None:
    canvas = indexed(image_with_colours(20, 10, 4, seed=3))
    canvas.info["transparency"] = 0
    assert not png.paint_indexed(canvas, Image.new("RGB", (2, 2), (1, 2, 3)), (0, 0))
