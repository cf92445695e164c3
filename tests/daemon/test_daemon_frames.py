"""Frame validation reads the header only and names the offending field."""

from __future__ import annotations

import pytest

from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.frames import EncodedFrame, FrameLimits, ImageEncoding, validate_frame
from holodesk.daemon.geometry import Size
from tests.daemon.support import image_bytes

LIMITS = FrameLimits(max_bytes=1 << 20, max_pixels=4000 * 3000)


def frame(width: int = 320, height: int = 200, fmt: str = "PNG", **changes: object) -> EncodedFrame:
    values: dict[str, object] = {
        "frame_id": "f",
        "size": Size(width, height),
        "encoding": ImageEncoding[fmt],
        "data": image_bytes(width, height, fmt),
    }
    values.update(changes)
    return EncodedFrame(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "WEBP"])
def test_valid_frames_pass(fmt: str) -> None:
    validate_frame(frame(fmt=fmt), LIMITS)


@pytest.mark.parametrize(
    ("bad", "field", "text"),
    [
        (frame(frame_id=""), "frame.frame_id", "needs an id"),
        (frame(size=Size(0, 200)), "frame.size", "positive"),
        (frame(size=Size(5000, 5000)), "frame.size", "above the limit"),
        (frame(data=b""), "frame.data", "no image bytes"),
        (frame(data=b"x" * ((1 << 20) + 1)), "frame.data", "above the frame limit"),
        (frame(data=b"GIF89a" + b"\0" * 40), "frame.data", "not a decodable image"),
        (frame(encoding=ImageEncoding.JPEG), "frame.encoding", "bytes are PNG"),
        (frame(size=Size(321, 200)), "frame.size", "image is 320x200"),
        (frame(scale_factor=0.0), "frame.scale_factor", "positive"),
    ],
)
def test_invalid_frames_name_the_field(bad: EncodedFrame, field: str, text: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        validate_frame(bad, LIMITS)
    assert caught.value.field == field
    assert text in caught.value.description


def test_repr_never_dumps_the_bytes() -> None:
    assert "bytes=" in repr(frame())
    assert "\\x89PNG" not in repr(frame())
