"""Screenshot -> an image Tesseract reads well: grey, dark text on light, large enough.

Tesseract is trained on printed pages: dark glyphs on a light background with an
x-height of 20-30 px. Screens break these assumptions: UI fonts are 11-14 px;
dark buttons, title bars and dark themes put light text on dark backgrounds,
which Tesseract's layout analysis drops as "image" regions; and the borders of
buttons and fields make it read the framed text as a table or as glyphs ("[id"
for "Name:" beside a field). So we flip the polarity of dark regions, erase long
horizontal rules, and upscale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageChops, ImageFilter, ImageOps

# Pixels darker than this are "dark"; also the background threshold of a region.
_DARK = 128
# How much darker than its surroundings a pixel must be to count as ink.
_INK_CONTRAST = 40


@dataclass(frozen=True)
class PrepConfig:
    # Upscale so the long side reaches this many pixels, within [min_scale, max_scale].
    # 2x is the floor because UI text is small whatever the screen size; downsized
    # frames (what a model sees) have smaller text still, hence up to 3x.
    target_long_side: int = 2560
    min_scale: float = 2.0
    max_scale: float = 3.0
    # Above this many pixels after scaling, scale less: OCR time grows with area.
    max_pixels: int = 16_000_000
    # Radius (source pixels) of the neighbourhood that decides a region's background.
    background_radius: int = 8
    # Horizontal ink runs at least this long (source pixels) are rules, not glyphs:
    # a glyph's longest horizontal stroke is about its font size.
    rule_length: int = 30


@dataclass(frozen=True)
class Prepared:
    image: Image.Image
    # Prepared pixels per source pixel.
    scale: float


def prepare(image: Image.Image, config: PrepConfig = PrepConfig()) -> Prepared:
    grey = image.convert("L")
    grey = normalize_polarity(grey, config.background_radius)
    grey = erase_rules(grey, config.rule_length, config.background_radius)
    scale = choose_scale(grey.width, grey.height, config)
    if scale != 1.0:
        size = (max(1, round(grey.width * scale)), max(1, round(grey.height * scale)))
        grey = grey.resize(size, Image.Resampling.LANCZOS)
    return Prepared(grey, scale)


def choose_scale(width: int, height: int, config: PrepConfig = PrepConfig()) -> float:
    """Source -> prepared scale factor; never below 1 (shrinking loses small text)."""
    long_side = max(width, height, 1)
    scale = min(max(config.target_long_side / long_side, config.min_scale), config.max_scale)
    area_cap = math.sqrt(config.max_pixels / max(width * height, 1))
    return max(1.0, min(scale, area_cap))


def normalize_polarity(grey: Image.Image, radius: int) -> Image.Image:
    """Invert dark regions so that all text ends up dark on light.

    A region is dark where the median of its neighbourhood is dark: a median, not
    a mean, so that large bold text (mostly ink up close) stays a light region.
    The mask is coarse at the region's edge, and a dark rim left there makes
    Tesseract see a framed box and skip it; so dark pixels within `radius` of a
    dark region are inverted too.
    """
    core = _dark_background(grey, radius)
    if core.getbbox() is None:  # a light screen: nothing to flip
        return grey
    # Dilate the core with a box blur: anything it touched becomes non-zero.
    near = core.filter(ImageFilter.BoxBlur(radius)).point(lambda v: 255 if v > 0 else 0)
    mask = ImageChops.lighter(core, ImageChops.multiply(near, _threshold(grey)))
    return Image.composite(ImageOps.invert(grey), grey, mask)


def _dark_background(grey: Image.Image, radius: int) -> Image.Image:
    """255 where the median of the ~2*radius square around a pixel is dark."""
    # A median filter at full resolution is slow; on a 4x-subsampled copy it is
    # cheap and still far finer than any button. Subsampled, not averaged: an
    # average of glyph and background pixels is neither, and tips the median.
    factor = max(1, radius // 2)
    small = grey.resize(
        (max(1, grey.width // factor), max(1, grey.height // factor)),
        Image.Resampling.NEAREST,
    )
    window = 2 * max(1, round(radius / factor)) + 1
    dark = _threshold(small.filter(ImageFilter.MedianFilter(window)))
    # Opening drops specks: the inside of large bold glyphs can be mostly ink.
    dark = dark.filter(ImageFilter.MinFilter(3)).filter(ImageFilter.MaxFilter(3))
    return dark.resize(grey.size, Image.Resampling.NEAREST)


def erase_rules(grey: Image.Image, length: int, radius: int) -> Image.Image:
    """Paint horizontal lines (field and button borders, underlines) in the background."""
    pixels = np.asarray(grey, dtype=np.int16)
    background = np.asarray(grey.filter(ImageFilter.BoxBlur(radius)), dtype=np.int16)
    # Ink relative to the local background, so text on a grey toolbar is ink and the
    # toolbar itself is not.
    rules = _long_runs(pixels < background - _INK_CONTRAST, length)
    if not rules.any():
        return grey
    cleaned = pixels.copy()
    cleaned[rules] = background[rules]
    return Image.fromarray(cleaned.astype(np.uint8), mode="L")


def _long_runs(mask: npt.NDArray[np.bool_], length: int) -> npt.NDArray[np.bool_]:
    """Pixels belonging to a horizontal run of True at least `length` long."""
    rows, width = mask.shape
    if width < length or length < 1:
        return np.zeros_like(mask)
    zero = np.zeros((rows, 1), dtype=np.int32)
    ink = np.concatenate([zero, np.cumsum(mask, axis=1, dtype=np.int32)], axis=1)
    # full[:, i]: the window [i, i + length) is all ink.
    full = (ink[:, length:] - ink[:, :-length]) == length
    starts = np.concatenate([zero, np.cumsum(full, axis=1, dtype=np.int32)], axis=1)
    # A pixel x is covered when some full window starts in [x - length + 1, x].
    x = np.arange(width)
    high = np.minimum(x, full.shape[1] - 1) + 1
    low = np.maximum(x - length + 1, 0)
    covered: npt.NDArray[np.bool_] = (starts[:, high] - starts[:, low]) > 0
    return covered


def _threshold(grey: Image.Image) -> Image.Image:
    """255 where darker than _DARK, else 0."""
    return grey.point(lambda v: 255 if v < _DARK else 0)
