"""Frame values: what the daemon asks for (FrameSpec) and what was sent (SentFrame)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from holodesk.platform.base import Region
from holodesk.values.encoding import ImageEncoding

DEFAULT_QUALITY = 85


@dataclass(frozen=True)
class FrameSpec:
    """How every frame of a session is downsized and encoded (0 means no limit)."""

    max_width: int = 0
    max_height: int = 0
    encoding: ImageEncoding = ImageEncoding.PNG
    # 1-100 for lossy encodings.
    quality: int = DEFAULT_QUALITY
    max_bytes: int = 0
    # The daemon rebuilds delta frames (unchanged, or a few patches on the last frame).
    accept_deltas: bool = False

    def __post_init__(self) -> None:
        if self.max_width < 0 or self.max_height < 0 or self.max_bytes < 0:
            raise ValueError(f"frame spec limits must not be negative: {self}")
        if not 1 <= self.quality <= 100:
            raise ValueError(f"frame spec quality must be 1-100, got {self.quality}")


@dataclass(frozen=True)
class FramePatch:
    """New pixels of a delta frame: a rectangle of the frame and an image of its size."""

    x: int
    y: int
    width: int
    height: int
    encoding: ImageEncoding
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class SentFrame:
    """One encoded frame exactly as sent, with the coordinate frame it was taken in.

    `source` is the captured region of the virtual desktop in physical pixels; the
    image is `width` x `height` pixels, so one frame pixel covers
    source.width / width physical pixels horizontally.

    A delta frame (`base_frame_id` set) has no `data`: it is the base frame with
    `patches` painted over it, in order (none: the screen did not change).
    """

    frame_id: str
    width: int
    height: int
    encoding: ImageEncoding
    data: bytes = field(repr=False)
    # Empty when the frame spans the whole virtual desktop.
    display_id: str
    source: Region
    scale_factor: float
    captured_at: datetime
    base_frame_id: str = ""
    patches: tuple[FramePatch, ...] = ()

    @property
    def is_delta(self) -> bool:
        return bool(self.base_frame_id)

    @property
    def wire_bytes(self) -> int:
        """Image bytes this frame puts on the wire (a delta: its patches)."""
        return len(self.data) + sum(len(p.data) for p in self.patches)
