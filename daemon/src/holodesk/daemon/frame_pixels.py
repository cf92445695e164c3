"""Frames' bytes to pixels and back: the one place the daemon decodes or encodes a screen.

A frame is its encoded image (`EncodedFrame.data`) with its patches painted over it
in order (a rebuilt delta: see frame_deltas), so its pixels are made here, whoever
asks (the delta rebuild, a model image, the OCR policy), and a frame that must
stand alone as one image (a recording) is encoded here.

A frame's bytes are the client's: a body that does not decode (a valid header, then
junk) is the caller's error, INVALID_ARGUMENT naming the frame, never an internal one.
"""

from __future__ import annotations

import io
import threading
import warnings
from collections.abc import Iterable
from dataclasses import replace

from PIL import Image, UnidentifiedImageError

from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.frames import EncodedFrame, FramePatch, ImageEncoding
from holodesk.values.png import exact_palette, paint_indexed

# How frames the daemon encodes are stored: lossless (a later delta paints on exact
# pixels) and fast. Screens of up to 256 colours (most: see holodesk.values.png) as
# indexed PNG at zlib level 1: 3-5x faster to encode than the RGB alternatives and
# what the client sends. Others as WebP lossless at its fastest effort: about as
# fast as RGB PNG level 1 and 35-40% smaller (bench_client_pipeline.py measures both).
LOSSLESS_PNG_LEVEL = 1
# Per worker thread: the last frame decoded and its pixels (see `decode`).
_last_decoded = threading.local()


def decode(frame: EncodedFrame, field: str = "frame.data") -> Image.Image:
    """The frame's pixels, to read, never to paint on (see `canvas`): indexed ("P")
    while the image and its patches allow, else RGB. InvalidArgument (`field`,
    naming the frame) when its bytes do not decode.

    A session's window is a few frames of one chain (the same image, more patches
    each), and an engine that must see them again asks for them oldest first, in
    one thread: so each thread remembers the last frame it decoded, and a frame
    that extends it is that image copied with the rest of its patches painted
    (~2 ms at 1080p) instead of a decode of the image (~20 ms). One screen per
    worker thread, replaced by the next decode."""
    last: tuple[EncodedFrame, Image.Image] | None = getattr(_last_decoded, "frame", None)
    done = _extends(frame, last[0]) if last is not None else -1
    if last is not None and done == len(frame.patches):
        return last[1]
    if last is not None and done >= 0:
        pixels = paint(last[1].copy(), frame.patches[done:], "frame.patches")
    else:
        image = decode_bytes(frame.data, field, f"frame {frame.frame_id!r}")
        # Its patches decoded when the frame was rebuilt: they cannot fail here.
        pixels = paint(image, frame.patches, "frame.patches")
    _last_decoded.frame = (frame, pixels)
    return pixels


def canvas(frame: EncodedFrame, field: str = "frame.data") -> Image.Image:
    """The frame's pixels as an image of the caller's own, to paint on."""
    return decode(frame, field).copy()


def _extends(frame: EncodedFrame, earlier: EncodedFrame) -> int:
    """How many of `frame`'s patches `earlier` already has painted, when `frame` is
    `earlier` with more patches (the same image bytes, its patches first); else -1."""
    done = len(earlier.patches)
    if frame.data is not earlier.data or len(frame.patches) < done:
        return -1
    ours = frame.patches[:done]
    return done if all(a is b for a, b in zip(ours, earlier.patches, strict=True)) else -1


# A patch decoded: its RGB pixels and where they go on the frame.
DecodedPatch = tuple[Image.Image, tuple[int, int]]


def decode_patches(patches: Iterable[FramePatch], where: str) -> list[DecodedPatch]:
    """Each patch's RGB pixels and its point, decoded once (a rebuild paints them on
    a whole screen or band by band on a packed one). `where` names the patches for
    an error: field `{where}[i].data`."""
    return [
        (
            decode_bytes(patch.data, f"{where}[{index}].data", "the patch").convert("RGB"),
            (patch.rect.x, patch.rect.y),
        )
        for index, patch in enumerate(patches)
    ]


def paint(canvas: Image.Image, patches: Iterable[FramePatch], where: str) -> Image.Image:
    """The canvas with the patches painted over it in order (in place while it stays
    indexed; an RGB copy once a patch's colours do not fit its palette)."""
    return paint_decoded(canvas, decode_patches(patches, where))


def paint_decoded(canvas: Image.Image, patches: Iterable[DecodedPatch]) -> Image.Image:
    """`paint`, with the patches decoded already."""
    for pixels, at in patches:
        if not paint_indexed(canvas, pixels, at):
            if canvas.mode != "RGB":
                canvas = canvas.convert("RGB")
            canvas.paste(pixels, at)
    return canvas


def standalone(frame: EncodedFrame) -> EncodedFrame:
    """The frame as one image (its patches painted in and encoded losslessly), for
    whoever reads its bytes without the daemon (a recording); as it is when it has
    no patches."""
    return encoded_as(frame, decode(frame)) if frame.patches else frame


def encoded_as(frame: EncodedFrame, pixels: Image.Image) -> EncodedFrame:
    """The frame, with `pixels` (what it shows) encoded losslessly as its one image."""
    encoding, data = encode_lossless(pixels)
    # Every other field (id, geometry, capture time) stays the frame's own.
    return replace(frame, encoding=encoding, data=data, patches=())


def encode_lossless(image: Image.Image) -> tuple[ImageEncoding, bytes]:
    """Indexed PNG when the image is indexed or has at most 256 colours, else WebP
    lossless."""
    indexed = image if image.mode == "P" else exact_palette(image)
    buffer = io.BytesIO()
    if indexed is not None:
        indexed.save(buffer, "PNG", compress_level=LOSSLESS_PNG_LEVEL)
        return ImageEncoding.PNG, buffer.getvalue()
    # method 0 / quality 0: WebP's fastest lossless effort (still exact).
    image.save(buffer, "WEBP", lossless=True, method=0, quality=0)
    return ImageEncoding.WEBP, buffer.getvalue()


def decode_bytes(data: bytes, field: str, what: str) -> Image.Image:
    """The image, loaded: indexed ("P") images stay indexed, the rest become RGB."""
    try:
        with warnings.catch_warnings():
            # Sizes were checked against the frame limits already.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                return image if image.mode == "P" else image.convert("RGB")
    # Pillow's plugins raise SyntaxError for some malformed files.
    except (
        UnidentifiedImageError,
        Image.DecompressionBombError,
        OSError,
        ValueError,
        SyntaxError,
    ) as exc:
        raise InvalidArgument(
            field, f"{what} cannot be decoded ({type(exc).__name__}: {exc})"
        ) from exc
