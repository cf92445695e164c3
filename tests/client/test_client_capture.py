"""Capture, downsize and encode through the fake backend."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from holodesk.client.capture import (
    ALL_DISPLAYS,
    CaptureError,
    FrameCapturer,
    FrameTooLargeError,
    encode_within,
    fit_size,
)
from holodesk.client.frames import FrameSpec
from holodesk.platform.backends import fake
from holodesk.platform.base import Region
from holodesk.values.encoding import ImageEncoding
from holodesk.values.png import encode_png


def _decode(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


@pytest.mark.parametrize(
    ("size", "box", "expected"),
    [
        ((1920, 1080), (1280, 1280), (1280, 720)),
        ((1920, 1080), (0, 0), (1920, 1080)),
        ((1920, 1080), (0, 540), (960, 540)),
        ((800, 600), (1280, 1280), (800, 600)),  # never upscaled
        ((2560, 1600), (1000, 1000), (1000, 625)),
        ((1366, 768), (1024, 1024), (1024, 576)),
        ((3, 1000), (10, 10), (1, 10)),  # never below one pixel
    ],
)
def test_fit_size_keeps_aspect_inside_the_box(
    size: tuple[int, int], box: tuple[int, int], expected: tuple[int, int]
) -> None:
    assert fit_size(*size, *box) == expected


def test_hidpi_display_left_of_primary_is_captured_with_its_true_region(
    backend: fake.FakeBackend,
) -> None:
    spec = FrameSpec(max_width=1280, max_height=1280, encoding=ImageEncoding.PNG)
    frame = FrameCapturer(backend.screen, spec, "retina").capture()

    assert backend.screen.grabs == [Region(-2560, -200, 2560, 1600)]
    assert frame.source == Region(-2560, -200, 2560, 1600)
    assert frame.display_id == "retina"
    assert frame.scale_factor == 2.0
    assert (frame.width, frame.height) == (1280, 800)
    image = _decode(frame.data)
    assert image.format == "PNG"
    assert image.size == (1280, 800)
    # The pixels are the retina display's, downsized: compare with a reference resize.
    reference = backend.screen.image.crop((0, 0, 2560, 1600)).resize(
        (1280, 800), Image.Resampling.BOX
    )
    for xy in [(0, 0), (640, 400), (1279, 799), (17, 623)]:
        got, want = image.getpixel(xy), reference.getpixel(xy)
        assert isinstance(got, tuple)
        assert isinstance(want, tuple)
        assert all(abs(g - w) <= 24 for g, w in zip(got, want, strict=True)), (xy, got, want)


def test_default_is_the_primary_display(backend: fake.FakeBackend) -> None:
    frame = FrameCapturer(backend.screen, FrameSpec()).capture()
    assert frame.display_id == "main"
    assert frame.source == Region(0, 0, 1280, 800)
    assert (frame.width, frame.height) == (1280, 800)  # no limits: sent at full size


def test_all_displays_captures_the_whole_virtual_desktop(backend: fake.FakeBackend) -> None:
    spec = FrameSpec(max_width=1000, max_height=1000)
    frame = FrameCapturer(backend.screen, spec, ALL_DISPLAYS).capture()
    assert frame.display_id == ""
    assert frame.source == Region(-2560, -200, 3840, 1600)
    assert (frame.width, frame.height) == (1000, 417)
    assert frame.scale_factor == 1.0  # the primary display's


@pytest.mark.parametrize(
    ("encoding", "pil_format"),
    [(ImageEncoding.PNG, "PNG"), (ImageEncoding.JPEG, "JPEG"), (ImageEncoding.WEBP, "WEBP")],
)
def test_each_encoding_produces_that_format(
    backend: fake.FakeBackend, encoding: ImageEncoding, pil_format: str
) -> None:
    spec = FrameSpec(max_width=640, max_height=640, encoding=encoding, quality=70)
    frame = FrameCapturer(backend.screen, spec).capture()
    image = _decode(frame.data)
    assert frame.encoding is encoding
    assert image.format == pil_format
    assert image.size == (frame.width, frame.height) == (640, 400)
    assert image.mode == "RGB"


def test_frame_ids_are_unique(backend: fake.FakeBackend) -> None:
    capturer = FrameCapturer(backend.screen, FrameSpec(max_width=64, max_height=64))
    ids = {capturer.capture().frame_id for _ in range(20)}
    assert len(ids) == 20


def test_too_large_frame_is_reencoded_at_lower_quality(backend: fake.FakeBackend) -> None:
    spec = FrameSpec(max_width=640, max_height=640, encoding=ImageEncoding.JPEG, quality=95)
    full = FrameCapturer(backend.screen, spec).capture()
    limit = len(full.data) * 2 // 3
    limited = FrameCapturer(
        backend.screen, FrameSpec(640, 640, ImageEncoding.JPEG, 95, limit)
    ).capture()
    assert len(limited.data) <= limit < len(full.data)
    assert _decode(limited.data).size == (640, 400)


@pytest.mark.parametrize("encoding", [ImageEncoding.PNG, ImageEncoding.JPEG, ImageEncoding.WEBP])
def test_frame_over_the_limit_at_every_setting_fails_clearly(
    backend: fake.FakeBackend, encoding: ImageEncoding
) -> None:
    spec = FrameSpec(max_width=640, max_height=640, encoding=encoding, max_bytes=200)
    with pytest.raises(FrameTooLargeError, match=r"over the daemon's limit of 200 bytes"):
        FrameCapturer(backend.screen, spec).capture()


def test_unknown_display_lists_the_known_ones(backend: fake.FakeBackend) -> None:
    with pytest.raises(CaptureError, match=r"no display 'DP-9'.*'main', 'retina'"):
        FrameCapturer(backend.screen, FrameSpec(), "DP-9").capture()


@pytest.mark.parametrize("quality", [0, 101])
def test_frame_spec_rejects_bad_quality(quality: int) -> None:
    with pytest.raises(ValueError, match="quality"):
        FrameSpec(quality=quality)


def test_a_png_over_the_limit_is_compressed_harder_and_stays_exact() -> None:
    image = Image.new("RGB", (640, 400), (246, 246, 248))
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=13)
    for row in range(25):
        draw.text(
            (10, row * 15), "the quick brown fox jumps over the lazy dog " * 2, (30, 30, 30), font
        )
    usual, hardest = len(encode_png(image, 6)), len(encode_png(image, 9))
    assert hardest < usual
    data = encode_within(image, FrameSpec(encoding=ImageEncoding.PNG, max_bytes=hardest))
    assert len(data) == hardest
    assert np.array_equal(np.asarray(_decode(data).convert("RGB")), np.asarray(image))
