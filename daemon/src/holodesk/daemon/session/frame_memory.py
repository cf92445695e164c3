"""One byte budget for the frames every session holds.

Each session keeps its history window encoded (up to 4 frames for holotron; ~0.1-0.7 MiB
each at 1080p), so the daemon's memory grows with sessions times frame size. Past
the budget the daemon says so instead of growing until the OOM killer ends every
session at once: a new session is refused, and a session whose next frame would
not fit has that frame refused (RESOURCE_EXHAUSTED with RetryInfo, either way). A
refused session stays detached for the resume window, so its client can resume it
once memory is free again.

Bytes shared between frames (an unchanged screen shares its base's bytes, a
rebuilt one its base's image and patches) count once per session.
"""

from __future__ import annotations

from collections.abc import Iterable

from holodesk.daemon.errors import RETRY_WHEN_FULL_S, ResourceExhausted
from holodesk.daemon.frames import EncodedFrame

MIB = 1024 * 1024
DEFAULT_MAX_BYTES = 2048 * MIB


class FrameMemoryFull(ResourceExhausted):
    """The frame budget is spent: the session that met it stays resumable."""


class FrameMemory:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes <= 0:
            raise ValueError(f"the frame memory budget must be positive, got {max_bytes}")
        self.max_bytes = max_bytes
        self._held = 0

    @property
    def held(self) -> int:
        return self._held

    def check_room(self) -> None:
        """Refuse a new session while the budget is spent."""
        if self._held >= self.max_bytes:
            raise self._full("no frame memory is left for a new session")

    def change(self, delta: int, what: str = "the frame") -> None:
        """Hold `delta` more bytes (fewer when negative); ResourceExhausted, holding
        nothing more, when growth would pass the budget."""
        if delta > 0 and self._held + delta > self.max_bytes:
            raise self._full(f"{what} ({delta} more bytes) does not fit")
        self._held = max(0, self._held + delta)

    def _full(self, what: str) -> FrameMemoryFull:
        return FrameMemoryFull(
            "frame memory",
            f"{what}: the daemon's sessions hold {self._held} of the {self.max_bytes} bytes "
            "of frames it allows (--max-frame-memory-mb)",
            retry_after_s=RETRY_WHEN_FULL_S,
        )


def unique_bytes(frames: Iterable[EncodedFrame]) -> int:
    """Bytes the frames hold, counting bytes objects they share once."""
    shared = {id(part): len(part) for frame in frames for part in frame.byte_parts()}
    return sum(shared.values())
