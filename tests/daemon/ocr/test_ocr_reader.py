"""read_text on rendered screenshots: every word found where it was drawn."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from holodesk.daemon.policies.ocr.preprocess import PrepConfig, choose_scale, normalize_polarity
from holodesk.daemon.policies.ocr.reader import TextBox, group_lines, lines_of, read_text
from holodesk.daemon.policies.ocr.tesseract import (
    OcrError,
    OcrTimeoutError,
    TesseractConfig,
    TesseractNotFoundError,
    parse_tsv,
    run_tesseract,
)

from .screens import SANS, Box, Screen, form_screen, tk_like_screen

# Tesseract's ink boxes and Pillow's differ by antialiasing and rounding.
TOLERANCE_PX = 3

SIZES = {"1280x800": None, "1024x640": (1024, 640)}


@pytest.fixture(scope="module", params=list(SIZES))
def screen(request: pytest.FixtureRequest) -> tuple[Screen, list[TextBox]]:
    rendered = form_screen()
    size = SIZES[request.param]
    if size is not None:
        rendered = rendered.resized(*size)
    return rendered, read_text(rendered.image)


def _find_words(words: list[TextBox], text: str) -> list[TextBox]:
    """The run of words on one line whose texts are `text`'s words."""
    wanted = text.split()
    for line in lines_of(words):
        for start in range(len(line) - len(wanted) + 1):
            run = line[start : start + len(wanted)]
            if [w.text for w in run] == wanted:
                return run
    read = [[w.text for w in line] for line in lines_of(words)]
    raise AssertionError(f"{text!r} not read; lines: {read}")


def _union(words: list[TextBox]) -> Box:
    return (
        min(w.left for w in words),
        min(w.top for w in words),
        max(w.right for w in words),
        max(w.bottom for w in words),
    )


@pytest.mark.parametrize(
    "text",
    [
        "File",
        "Help",
        "Customer details",
        "Name:",
        "Email address:",
        "Comments",
        "OK",
        "Cancel",
        "Save changes",  # white on a dark button
        "Apple",
        "Dragon fruit",
    ],
)
def test_words_are_read_where_they_were_drawn(
    screen: tuple[Screen, list[TextBox]], text: str
) -> None:
    rendered, words = screen
    read = _union(_find_words(words, text))
    drawn = rendered.texts[text]
    centre = ((read[0] + read[2]) / 2, (read[1] + read[3]) / 2)
    expected = ((drawn[0] + drawn[2]) / 2, (drawn[1] + drawn[3]) / 2)
    assert abs(centre[0] - expected[0]) <= TOLERANCE_PX, (read, drawn)
    assert abs(centre[1] - expected[1]) <= TOLERANCE_PX, (read, drawn)
    assert abs(read[0] - drawn[0]) <= TOLERANCE_PX
    assert abs(read[2] - drawn[2]) <= TOLERANCE_PX


def test_accented_text_is_read_with_its_letters(screen: tuple[Screen, list[TextBox]]) -> None:
    _, words = screen
    line = next(ws for ws in lines_of(words) if ws[0].text.startswith("D") and len(ws) == 4)
    # The English model keeps é but may drop the grave on à; matching folds accents.
    assert [w.text for w in line][1:] == ["vu", "au", "café"]


def test_words_of_a_line_share_a_line_and_far_widgets_do_not(
    screen: tuple[Screen, list[TextBox]],
) -> None:
    _, words = screen
    email, address = _find_words(words, "Email address:")
    assert email.line == address.line
    ok, cancel = _find_words(words, "OK")[0], _find_words(words, "Cancel")[0]
    assert ok.line != cancel.line  # separate buttons, though on one row
    name = _find_words(words, "Name:")[0]
    deja = _find_words(words, "vu")[0]
    assert name.line != deja.line


def test_lines_come_in_reading_order(screen: tuple[Screen, list[TextBox]]) -> None:
    _, words = screen
    texts = [" ".join(w.text for w in line) for line in lines_of(words)]
    assert texts[:4] == ["File", "Edit", "View", "Help"]
    assert texts.index("Apple") < texts.index("Banana") < texts.index("Cherry")
    assert texts.index("OK") < texts.index("Cancel")


@pytest.mark.parametrize("size", [None, (720, 416)])
def test_large_bold_heading_and_plain_text_on_white(size: tuple[int, int] | None) -> None:
    rendered = tk_like_screen()
    if size is not None:
        rendered = rendered.resized(*size)
    words = read_text(rendered.image)
    for text in ("Sign up", "Name", "Submit"):
        read = _union(_find_words(words, text))
        drawn = rendered.texts[text]
        assert abs((read[0] + read[2]) - (drawn[0] + drawn[2])) / 2 <= TOLERANCE_PX


def test_dark_theme_text_is_read() -> None:
    image = Image.new("RGB", (800, 300), (30, 30, 34))
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(str(SANS), 14)
    draw.text((40, 40), "Open recent", font=font, fill=(220, 220, 220))
    draw.rectangle((400, 120, 560, 156), fill=(70, 110, 200))
    draw.text((440, 129), "Deploy", font=font, fill=(255, 255, 255))
    texts = [" ".join(w.text for w in line) for line in lines_of(read_text(image))]
    assert "Open recent" in texts
    assert "Deploy" in texts


def test_blank_and_tiny_images_have_no_words() -> None:
    assert read_text(Image.new("RGB", (640, 400), (255, 255, 255))) == []
    assert read_text(Image.new("RGB", (1, 1), (0, 0, 0))) == []


def test_missing_tesseract_names_the_package_to_install() -> None:
    config = TesseractConfig(command="tesseract-that-is-not-installed")
    with pytest.raises(TesseractNotFoundError) as caught:
        run_tesseract(Image.new("L", (10, 10), 255), config)
    message = str(caught.value)
    assert "apt-get install tesseract-ocr" in message
    assert "brew install tesseract" in message
    assert "winget install" in message


def test_a_pass_over_its_time_limit_is_stopped() -> None:
    image = Image.new("L", (2000, 2000), 255)
    with pytest.raises(OcrTimeoutError, match="longer than"):
        run_tesseract(image, TesseractConfig(timeout_s=0.001))


def test_a_missing_language_is_explained() -> None:
    with pytest.raises(OcrError, match="language data"):
        run_tesseract(Image.new("L", (50, 50), 255), TesseractConfig(languages="qqq"))


def test_parse_tsv_keeps_words_with_text_only() -> None:
    columns = "level page_num block_num par_num line_num word_num left top width height conf text"
    header = columns.replace(" ", "\t")
    rows = [
        header,
        "1\t1\t0\t0\t0\t0\t0\t0\t800\t600\t-1\t",
        '5\t1\t2\t1\t1\t1\t10\t20\t30\t12\t96.5\t"Quoted"',
        "5\t1\t2\t1\t1\t2\t50\t20\t30\t12\t91\t   ",
        "5\t1\t3\t1\t1\t1\t5\t6\t7\t8\t12.25\ta\tb",
    ]
    words = parse_tsv("\n".join(rows))
    assert [(w.text, w.left, w.top, w.width, w.height) for w in words] == [
        ('"Quoted"', 10, 20, 30, 12),
        ("a\tb", 5, 6, 7, 8),
    ]
    assert words[0].confidence == 96.5
    assert words[0].block == 2


@pytest.mark.parametrize(
    ("size", "scale"),
    [((1280, 800), 2.0), ((1024, 640), 2.5), ((640, 400), 3.0), ((1920, 1080), 2.0)],
)
def test_upscale_factor(size: tuple[int, int], scale: float) -> None:
    assert choose_scale(*size) == pytest.approx(scale)


def test_upscale_is_capped_by_area_but_never_shrinks() -> None:
    config = PrepConfig(max_pixels=4_000_000)
    assert choose_scale(1000, 1000, config) == pytest.approx(2.0)
    assert choose_scale(4000, 4000, config) == 1.0


def test_light_text_on_dark_becomes_dark_on_light() -> None:
    image = Image.new("L", (200, 100), 20)
    ImageDraw.Draw(image).text((20, 40), "Hi", font=ImageFont.truetype(str(SANS), 20), fill=240)
    flipped = normalize_polarity(image, 8)
    assert flipped.getpixel((5, 5)) == 235  # background now light
    glyphs = np.asarray(flipped.crop((20, 40, 60, 70)))
    assert glyphs.min() < 60  # glyphs now dark


def test_group_lines_splits_rows_at_wide_gaps() -> None:
    def box(text: str, left: int, top: int) -> TextBox:
        return TextBox(text, 90.0, left, top, 10 * len(text), 12)

    words = [box("far", 400, 101), box("b", 60, 99), box("a", 40, 100), box("next", 40, 130)]
    grouped = group_lines(words)
    assert [[w.text for w in line] for line in lines_of(grouped)] == [
        ["a", "b"],
        ["far"],
        ["next"],
    ]
