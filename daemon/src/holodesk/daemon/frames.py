"""Encoded frames as the daemon keeps them, and their validation.

Frames stay encoded for their whole life in the daemon (history windows hold
bytes, not pixels); pixels are made from them only when needed (frame_pixels).
A frame rebuilt from deltas is kept as the image it was painted on plus the
patches, exactly as the client sent them, so a changed screen costs no re-encode.
Validation reads the image header only, so it is cheap enough for every step.
"""

from __future__ import annotations

import functools
import hashlib
import io
import warnings
from dataclasses import dataclass, field, replace

from PIL import Image, UnidentifiedImageError

from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.geometry import Rect, Size

# The contract's encodings, defined once (holodesk.values); the daemon's modules name
# them from here, beside the frames that carry them.
from holodesk.values.encoding import ImageEncoding as ImageEncoding


@dataclass(frozen=True)
class FramePatch:
    """New pixels: `rect` of the frame, as an image of exactly its size."""

    rect: Rect
    encoding: ImageEncoding
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class EncodedFrame:
    frame_id: str
    size: Size
    encoding: ImageEncoding
    # The encoded image; with `patches`, the image they are painted on.
    data: bytes = b""
    display_id: str = ""
    # Captured region of the virtual desktop, physical pixels.
    source: Rect | None = None
    scale_factor: float = 1.0
    # Painted over `data` in order: a frame rebuilt from deltas (frame_deltas). Only
    # frame_pixels reads a frame's pixels, so nothing else needs to know.
    patches: tuple[FramePatch, ...] = ()
    # When the client captured it (Frame.captured_at), in nanoseconds since the Unix
    # epoch, exactly as sent (a datetime would drop the nanoseconds); None when unset.
    captured_at_ns: int | None = None

    @functools.cached_property
    def content_key(self) -> str:
        """What the frame shows, as a digest: of its bytes, or of its base's key and
        the patches painted on it. An unchanged screen (a delta without patches)
        shares its base's key, so work done for one image (the model image, the
        engine's processing) serves both. Computed on first use (~0.3 ms for 300 KiB
        of bytes), not per read."""
        return _painted_key(hashlib.blake2b(self.data, digest_size=16).hexdigest(), self.patches)

    @property
    def nbytes(self) -> int:
        return sum(len(part) for part in self.byte_parts())

    def byte_parts(self) -> tuple[bytes, ...]:
        """The bytes objects the frame holds (shared with the frames it was built on)."""
        return (self.data, *(patch.data for patch in self.patches))

    def renamed(self, frame_id: str, captured_at_ns: int | None = None) -> EncodedFrame:
        """The same screen under another id, captured at `captured_at_ns` (an unchanged
        screen's delta): its bytes and content key are shared, not copied or hashed
        again."""
        frame = replace(self, frame_id=frame_id, captured_at_ns=captured_at_ns)
        if "content_key" in self.__dict__:  # computed already: carry it over
            frame.__dict__["content_key"] = self.content_key
        return frame

    def painted(
        self,
        frame_id: str,
        patches: tuple[FramePatch, ...],
        captured_at_ns: int | None = None,
    ) -> EncodedFrame:
        """This screen with `patches` painted over it, under another id, captured at
        `captured_at_ns`: its bytes are shared, and its key follows from this one's
        and the patches' (no rehash of the image)."""
        frame = replace(
            self,
            frame_id=frame_id,
            patches=self.patches + patches,
            captured_at_ns=captured_at_ns,
        )
        frame.__dict__["content_key"] = _painted_key(self.content_key, patches)
        return frame

    def __repr__(self) -> str:  # never dump megabytes of bytes into logs
        return (
            f"EncodedFrame(frame_id={self.frame_id!r}, size={self.size.width}x"
            f"{self.size.height}, encoding={self.encoding.value}, bytes={len(self.data)}, "
            f"patches={len(self.patches)})"
        )


def _painted_key(key: str, patches: tuple[FramePatch, ...]) -> str:
    """The key of the screen `key` names with the patches painted on it, one patch at
    a time: a frame painted in two steps has the key of one painted in one."""
    for patch in patches:
        rect = patch.rect
        digest = hashlib.blake2b(key.encode(), digest_size=16)
        digest.update(f"|{rect.x},{rect.y},{rect.width},{rect.height}|".encode())
        digest.update(patch.data)
        key = digest.hexdigest()
    return key


@dataclass(frozen=True)
class FrameSpec:
    """What the daemon asks frames to look like (mirrors holodesk.v1.FrameSpec)."""

    max_width: int = 0
    max_height: int = 0
    encoding: ImageEncoding = ImageEncoding.PNG
    quality: int = 90
    max_bytes: int = 0
    # Delta frames welcome (the session runner sets it; policies leave it False).
    accept_deltas: bool = False


def check_fits(size: Size, spec: FrameSpec, field: str) -> None:
    """InvalidArgument unless a frame of `size` fits the box its session was asked for.

    What keeps a frame's pixels, not only its bytes, bounded: a PNG of one colour
    is a few KiB at any size, so a frame allowed to be as large as the pixel limit
    (40 Mpx: 120 MB decoded) would make each delta on it decode and paint hundreds
    of MB. Within the box, a frame costs what the session's model needs."""
    too_wide = spec.max_width > 0 and size.width > spec.max_width
    too_tall = spec.max_height > 0 and size.height > spec.max_height
    if too_wide or too_tall:
        raise InvalidArgument(
            f"{field}.size",
            f"{size.width}x{size.height} does not fit the {spec.max_width}x"
            f"{spec.max_height} the daemon asked for (SessionStarted.frame_spec): "
            "downscale frames to fit it",
        )


@dataclass(frozen=True)
class FrameLimits:
    max_bytes: int = 16 * 1024 * 1024
    # 8K is 33 Mpx; anything above is a client bug or an attack.
    max_pixels: int = 40_000_000


def validate_frame(frame: EncodedFrame, limits: FrameLimits, field: str = "frame") -> None:
    """Raise InvalidArgument (naming the field) unless the frame is usable as declared."""
    if not frame.frame_id:
        raise InvalidArgument(f"{field}.frame_id", "a frame needs an id")
    if frame.size.width <= 0 or frame.size.height <= 0:
        raise InvalidArgument(f"{field}.size", "width and height must be positive")
    if frame.size.pixels > limits.max_pixels:
        raise InvalidArgument(
            f"{field}.size",
            f"{frame.size.width}x{frame.size.height} is {frame.size.pixels} pixels, "
            f"above the limit of {limits.max_pixels}",
        )
    if not frame.data:
        raise InvalidArgument(f"{field}.data", "the frame has no image bytes")
    if len(frame.data) > limits.max_bytes:
        raise InvalidArgument(
            f"{field}.data",
            f"{len(frame.data)} bytes, above the frame limit of {limits.max_bytes} bytes",
        )
    fmt, size = read_header(frame.data, field)
    if fmt != frame.encoding.pillow_format:
        raise InvalidArgument(
            f"{field}.encoding",
            f"declared {frame.encoding.value} but the bytes are {fmt or 'unknown'}",
        )
    if size != frame.size:
        raise InvalidArgument(
            f"{field}.size",
            f"declared {frame.size.width}x{frame.size.height} but the image is "
            f"{size.width}x{size.height}",
        )
    if frame.scale_factor <= 0:
        raise InvalidArgument(f"{field}.scale_factor", "must be positive")


def read_header(data: bytes, field: str) -> tuple[str, Size]:
    """(Pillow format name, size) from the image header; InvalidArgument if undecodable."""
    try:
        with warnings.catch_warnings():
            # Our own pixel limit already applied; Pillow's bomb warning is noise here.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                return image.format or "", Size(image.width, image.height)
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError) as exc:
        raise InvalidArgument(
            f"{field}.data", f"not a decodable image ({type(exc).__name__}: {exc})"
        ) from exc
