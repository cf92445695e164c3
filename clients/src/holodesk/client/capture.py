"""Captures one display (or the whole virtual desktop), downsizes and encodes it.

The client shrinks frames to the daemon's FrameSpec before sending, so no byte is
spent on pixels the model never sees; the SentFrame records exactly what was sent
so that action coordinates can be mapped back later. Redacted regions are
painted black first, at full resolution, so none of their pixels is ever encoded.
When the daemon accepts deltas, frames after the first of a stream carry only
what changed (see deltas.py).
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from PIL import Image

from holodesk.client.deltas import DeltaEncoder, FramePayload
from holodesk.client.frames import FrameSpec, SentFrame
from holodesk.client.resize import Downsizer
from holodesk.client.safety.redact import redact
from holodesk.platform.base import DisplayInfo, Grab, Region, ScreenSource
from holodesk.values.encoding import ImageEncoding
from holodesk.values.fit import fit_in_box
from holodesk.values.png import encode_png, exact_palette

ALL_DISPLAYS = "all"

# Lower qualities tried, in order, when a frame exceeds FrameSpec.max_bytes.
_FALLBACK_QUALITIES = (75, 60, 45, 30, 20)
_PNG_LEVELS = (6, 9)


class CaptureError(Exception):
    """A frame could not be captured or encoded within the daemon's limits."""


class FrameTooLargeError(CaptureError):
    pass


def fit_size(width: int, height: int, max_width: int, max_height: int) -> tuple[int, int]:
    """The largest size of the same aspect that fits the box (never upscaled): the
    contract's rule (holodesk.values.fit), which the daemon applies too."""
    if width <= 0 or height <= 0:
        raise CaptureError(f"cannot capture an empty region ({width}x{height})")
    return fit_in_box(width, height, max_width, max_height)


def downsize(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    # An integer box-reduce first for large factors, then Lanczos: close to full
    # Lanczos quality at a fraction of its cost (resize.py; deltas redo regions of it).
    return Downsizer(image.size, size).full(image)


def encode(image: Image.Image, encoding: ImageEncoding, quality: int, png_level: int = 6) -> bytes:
    if encoding is ImageEncoding.PNG:
        return encode_png(image, png_level)
    buffer = io.BytesIO()
    if encoding is ImageEncoding.JPEG:
        image.save(buffer, "JPEG", quality=quality)
    else:
        image.save(buffer, "WEBP", quality=quality, method=4)
    return buffer.getvalue()


def encode_within(image: Image.Image, spec: FrameSpec) -> bytes:
    """Encode per the spec; if over max_bytes, retry smaller settings, then fail."""
    if spec.encoding is ImageEncoding.PNG:
        attempts = [(spec.quality, level) for level in _PNG_LEVELS]
        image = exact_palette(image) or image  # indexed once, whatever the level
    else:
        lower = [q for q in _FALLBACK_QUALITIES if q < spec.quality]
        attempts = [(q, 6) for q in (spec.quality, *lower)]
    data = b""
    for quality, level in attempts:
        data = encode(image, spec.encoding, quality, level)
        if not spec.max_bytes or len(data) <= spec.max_bytes:
            return data
    raise FrameTooLargeError(
        f"a {image.width}x{image.height} {spec.encoding.value} frame is {len(data)} bytes "
        f"even at the lowest setting tried, over the daemon's limit of {spec.max_bytes} bytes"
    )


class FrameCapturer:
    """Captures frames of one display, or of the whole virtual desktop."""

    def __init__(
        self,
        screen: ScreenSource,
        spec: FrameSpec,
        display: str | None = None,
        redacted: Sequence[Region] = (),
    ) -> None:
        """`display`: a display id, ALL_DISPLAYS, or None for the primary display.

        `redacted`: desktop regions (physical pixels) blacked out of every frame.
        """
        self._screen = screen
        self._spec = spec
        self._display = display
        self._redacted = tuple(redacted)
        self._deltas = (
            DeltaEncoder(spec, lambda frame: encode_within(frame, spec))
            if spec.accept_deltas
            else None
        )
        self._last_grab: Grab | None = None

    @property
    def spec(self) -> FrameSpec:
        return self._spec

    def source(self) -> tuple[str, Region, float]:
        """(display id, region, scale factor) to capture; read each time as displays change."""
        displays = self._screen.displays()
        if not displays:
            raise CaptureError("the platform backend reports no displays")
        if self._display == ALL_DISPLAYS:
            # Mixed-DPI desktops have no single scale; report the primary display's.
            primary = find_display(displays, None)
            return "", self._screen.virtual_desktop(), primary.scale_factor
        chosen = find_display(displays, self._display)
        return chosen.display_id, chosen.bounds, chosen.scale_factor

    def capture(self) -> SentFrame:
        display_id, region, scale = self.source()
        captured_at = datetime.now(UTC)
        grab: Grab | None = None
        if self._deltas is None:
            image = self._screen.grab(region)
        else:
            # The source may know which rows changed since the last frame: only they
            # are then compared and re-encoded.
            grab = self._screen.grab_since(region, self._last_grab)
            image = grab.image
        if image.mode != "RGB":
            image = image.convert("RGB")
        # Redaction paints the same boxes every frame: changed rows stay as they were.
        image = redact(image, region, self._redacted)
        width, height = fit_size(
            region.width, region.height, self._spec.max_width, self._spec.max_height
        )
        frame_id = uuid.uuid4().hex
        if self._deltas is None:
            data = encode_within(downsize(image, (width, height)), self._spec)
            encoded = FramePayload(self._spec.encoding, data)
        else:
            geometry = (display_id, region, scale)
            changed_rows = grab.changed_rows if grab is not None else None
            encoded = self._deltas.encode(image, (width, height), frame_id, geometry, changed_rows)
            self._last_grab = grab  # only once encoded: the hint is against its screen
        return SentFrame(
            frame_id=frame_id,
            width=width,
            height=height,
            encoding=encoded.encoding,
            data=encoded.data,
            display_id=display_id,
            source=region,
            scale_factor=scale,
            captured_at=captured_at,
            base_frame_id=encoded.base_frame_id,
            patches=encoded.patches,
        )


def find_display(displays: list[DisplayInfo], display_id: str | None) -> DisplayInfo:
    """The display with this id (None: the primary one), or a clear error."""
    if display_id is None:
        return next((d for d in displays if d.primary), displays[0])
    for display in displays:
        if display.display_id == display_id:
            return display
    known = ", ".join(repr(d.display_id) for d in displays)
    raise CaptureError(f"no display {display_id!r}; this desktop has {known} (or {ALL_DISPLAYS!r})")
