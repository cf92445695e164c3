"""Delta frames at a real daemon: rebuilt exactly for the policy, or refused precisely.

A raw RunSession client (tests/daemon/support.py) sends hand-made deltas to a real
gRPC server; the RecordingPolicy shows what the policy was given.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from dataclasses import dataclass

import grpc
import numpy as np
import pytest
from google.rpc import error_details_pb2
from PIL import Image

from holodesk.daemon import frame_pixels
from holodesk.daemon.cli import build_parser, config_from_args
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.frames import EncodedFrame, FrameLimits, FramePatch, ImageEncoding
from holodesk.daemon.geometry import Rect, Size
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.session import frame_deltas
from holodesk.daemon.session.decoded_screens import DecodedScreens
from holodesk.proto.v1 import agent_pb2, frame_pb2, geometry_pb2
from holodesk.values.png import encode_png
from tests.daemon.support import (
    RecordingPolicy,
    Stream,
    holo,
    make_frame,
    ok_results,
    proxied,
    rich_status,
    running_daemon,
    the_session,
    wait_until,
)

WIDTH, HEIGHT = 64, 48
WAIT = holo({"action": "wait", "duration": 0.1})
ANSWER = holo({"action": "answer", "content": "done"})
MIB = 1024 * 1024


def encode(image: Image.Image, fmt: str = "PNG") -> bytes:
    buffer = io.BytesIO()
    if fmt == "WEBP":
        image.save(buffer, fmt, lossless=True)
    else:
        image.save(buffer, fmt)
    return buffer.getvalue()


def noise(width: int, height: int, seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


def decoded(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"))


def pixels_of(frame: EncodedFrame) -> np.ndarray:
    """What the frame shows: its image with its patches painted in."""
    return np.asarray(frame_pixels.decode(frame).convert("RGB"))


def full_frame(frame_id: str, image: Image.Image, fmt: str = "PNG") -> frame_pb2.Frame:
    return make_frame(frame_id, image.width, image.height, fmt=fmt, data=encode(image, fmt))


def patch(x: int, y: int, image: Image.Image, fmt: str = "PNG") -> frame_pb2.FramePatch:
    encoding = {"PNG": frame_pb2.IMAGE_ENCODING_PNG, "WEBP": frame_pb2.IMAGE_ENCODING_WEBP}[fmt]
    return frame_pb2.FramePatch(
        rect=geometry_pb2.Rect(x=x, y=y, width=image.width, height=image.height),
        encoding=encoding,
        data=encode(image, fmt),
    )


def delta(
    frame_id: str,
    base: str,
    *patches: frame_pb2.FramePatch,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> frame_pb2.Frame:
    """A delta frame with the geometry make_frame gives full frames."""
    return frame_pb2.Frame(
        frame_id=frame_id,
        size=geometry_pb2.Size(width=width, height=height),
        base_frame_id=base,
        patches=list(patches),
        source=geometry_pb2.Rect(x=0, y=0, width=width, height=height),
        scale_factor=1.0,
    )


async def test_deltas_are_offered_and_rebuilt_into_the_exact_frames_the_policy_sees() -> None:
    policy = RecordingPolicy([WAIT, WAIT, WAIT, ANSWER])
    base = noise(WIDTH, HEIGHT, 1)
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        assert started.frame_spec.accept_deltas
        step = (await stream.observe(full_frame("f1", base, "JPEG"))).actions
        # Unchanged: the policy gets f1's image under the new id, without any decoding.
        step = (await stream.observe(delta("f2", "f1"), ok_results(step))).actions
        # Two patches, the second painted over part of the first.
        first, second = noise(20, 10, 2), noise(8, 8, 3)
        wire = delta("f3", "f2", patch(5, 4, first), patch(10, 6, second, "WEBP"))
        step = (await stream.observe(wire, ok_results(step))).actions
        # A delta on an older frame the daemon still holds (holo's window keeps up to 4).
        ended = (await stream.observe(delta("f4", "f1"), ok_results(step))).ended
        assert ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
        f1, f2, f3, f4 = (c.frame for c in policy.contexts)
        assert (f2.frame_id, f2.data, f2.encoding) == ("f2", f1.data, ImageEncoding.JPEG)
        expected = decoded(f1.data).copy()  # the JPEG as decoded, patched losslessly
        expected[4:14, 5:25] = np.asarray(first)
        expected[6:14, 10:18] = np.asarray(second)
        assert f3.frame_id == "f3"
        # Kept as f1's bytes plus the two patches as sent: nothing was re-encoded.
        assert (f3.data, f3.encoding, len(f3.patches)) == (f1.data, ImageEncoding.JPEG, 2)
        np.testing.assert_array_equal(pixels_of(f3), expected)
        assert (f3.size, f3.source, f3.scale_factor) == (f1.size, f1.source, f1.scale_factor)
        assert f4.data == f1.data
        assert [f.frame_id for f in policy.contexts[-1].frames] == ["f1", "f2", "f3", "f4"]


async def test_a_daemon_started_without_deltas_does_not_offer_them_and_refuses_them() -> None:
    policy = RecordingPolicy([WAIT, ANSWER])
    async with running_daemon([policy], frame_deltas=False) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        assert not started.frame_spec.accept_deltas
        step = (await stream.observe(full_frame("f1", noise(WIDTH, HEIGHT, 1)))).actions
        await stream.observe_nowait(delta("f2", "f1"), ok_results(step))
        error = await stream.error()
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "does not accept delta frames" in (error.details() or "")


@dataclass(frozen=True)
class Bad:
    """A malformed second frame (on the valid first frame "f1") and the verdict."""

    frame: Callable[[], frame_pb2.Frame]
    field: str
    text: str


def _with(frame: frame_pb2.Frame, **fields: object) -> frame_pb2.Frame:
    out = frame_pb2.Frame()
    out.CopyFrom(frame)
    for name, value in fields.items():
        if isinstance(value, geometry_pb2.Size | geometry_pb2.Rect):
            getattr(out, name).CopyFrom(value)
        else:
            setattr(out, name, value)
    return out


def _patch_with(**fields: object) -> frame_pb2.FramePatch:
    out = patch(0, 0, noise(4, 4, 9))
    for name, value in fields.items():
        if isinstance(value, geometry_pb2.Rect):
            out.rect.CopyFrom(value)
        else:
            setattr(out, name, value)
    return out


def _rect(x: int, y: int, width: int, height: int) -> geometry_pb2.Rect:
    return geometry_pb2.Rect(x=x, y=y, width=width, height=height)


FIELD = "observation.frame"
BAD = {
    "unknown base": Bad(lambda: delta("f2", "nope"), f"{FIELD}.base_frame_id", "unknown base"),
    "other size": Bad(
        lambda: delta("f2", "f1", width=WIDTH // 2, height=HEIGHT // 2),
        f"{FIELD}.size",
        "a delta keeps its base's size",
    ),
    "other display": Bad(
        lambda: _with(delta("f2", "f1"), display_id="second"),
        f"{FIELD}.display_id",
        "keeps its base's display",
    ),
    "other source": Bad(
        lambda: _with(delta("f2", "f1"), source=_rect(10, 0, WIDTH, HEIGHT)),
        f"{FIELD}.source",
        "keeps its base's display",
    ),
    "other scale": Bad(
        lambda: _with(delta("f2", "f1"), scale_factor=2.0),
        f"{FIELD}.scale_factor",
        "keeps its base's display",
    ),
    "encoding set": Bad(
        lambda: _with(delta("f2", "f1"), encoding=frame_pb2.IMAGE_ENCODING_PNG),
        f"{FIELD}.encoding",
        "must be unset in a delta frame",
    ),
    "data set": Bad(
        lambda: _with(delta("f2", "f1"), data=encode(noise(WIDTH, HEIGHT, 2))),
        f"{FIELD}.data",
        "must be empty in a delta frame",
    ),
    "rect outside": Bad(
        lambda: delta("f2", "f1", _patch_with(rect=_rect(WIDTH - 2, 0, 4, 4))),
        f"{FIELD}.patches[0].rect",
        "is not inside the 64x48 frame",
    ),
    "negative rect": Bad(
        lambda: delta("f2", "f1", _patch_with(rect=_rect(-1, 0, 4, 4))),
        f"{FIELD}.patches[0].rect",
        "is not inside",
    ),
    "empty rect": Bad(
        lambda: delta("f2", "f1", _patch_with(rect=_rect(0, 0, 0, 4))),
        f"{FIELD}.patches[0].rect",
        "must be positive",
    ),
    "no rect": Bad(
        lambda: delta(
            "f2",
            "f1",
            frame_pb2.FramePatch(
                encoding=frame_pb2.IMAGE_ENCODING_PNG, data=encode(noise(4, 4, 1))
            ),
        ),
        f"{FIELD}.patches[0].rect",
        "must be set",
    ),
    "image size is not the rect's": Bad(
        lambda: delta("f2", "f1", _patch_with(rect=_rect(0, 0, 5, 4))),
        f"{FIELD}.patches[0].data",
        "the image is 4x4, but its rect is 5x4",
    ),
    "encoding is not the bytes'": Bad(
        lambda: delta("f2", "f1", _patch_with(encoding=frame_pb2.IMAGE_ENCODING_JPEG)),
        f"{FIELD}.patches[0].encoding",
        "declared jpeg but the bytes are PNG",
    ),
    "encoding unset": Bad(
        lambda: delta("f2", "f1", _patch_with(encoding=frame_pb2.IMAGE_ENCODING_UNSPECIFIED)),
        f"{FIELD}.patches[0].encoding",
        "unsupported image encoding 0",
    ),
    "no bytes": Bad(
        lambda: delta("f2", "f1", _patch_with(data=b"")),
        f"{FIELD}.patches[0].data",
        "no image bytes",
    ),
    "garbage bytes": Bad(
        lambda: delta("f2", "f1", _patch_with(data=b"\x89PNG\r\n\x1a\n garbage")),
        f"{FIELD}.patches[0].data",
        "not a decodable image",
    ),
    "truncated bytes": Bad(
        lambda: delta("f2", "f1", _patch_with(data=encode(noise(4, 4, 9))[:60])),
        f"{FIELD}.patches[0].data",
        "the patch cannot be decoded",
    ),
    "too many patches": Bad(
        lambda: delta(
            "f2", "f1", *[patch(0, 0, Image.new("RGB", (1, 1)))] * (frame_deltas.MAX_PATCHES + 1)
        ),
        f"{FIELD}.patches",
        f"above the limit of {frame_deltas.MAX_PATCHES}",
    ),
    "repainting the frame many times": Bad(
        lambda: delta("f2", "f1", *[patch(0, 0, Image.new("RGB", (WIDTH, HEIGHT)))] * 5),
        f"{FIELD}.patches",
        "over 4x the frame's",
    ),
    "frame id reused": Bad(lambda: delta("f1", "f1"), f"{FIELD}.frame_id", "already used"),
    "no frame id": Bad(lambda: delta("", "f1"), f"{FIELD}.frame_id", "needs an id"),
}


def _patches_without_base() -> frame_pb2.Frame:
    frame = full_frame("f2", noise(WIDTH, HEIGHT, 2))
    frame.patches.append(patch(0, 0, noise(4, 4, 1)))
    return frame


BAD["patches without a base"] = Bad(
    _patches_without_base, f"{FIELD}.patches", "patches need base_frame_id"
)


@pytest.mark.parametrize("name", list(BAD))
async def test_every_malformed_delta_is_refused_naming_its_field(name: str) -> None:
    bad = BAD[name]
    policy = RecordingPolicy([WAIT, ANSWER])
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        await stream.start()
        step = (await stream.observe(full_frame("f1", noise(WIDTH, HEIGHT, 1)))).actions
        await stream.observe_nowait(bad.frame(), ok_results(step))
        error = await stream.error()
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
        details = error.details() or ""
        assert details.startswith(f"{bad.field}: "), details
        assert bad.text in details
        request = error_details_pb2.BadRequest()
        assert rich_status(error).details[0].Unpack(request)
        assert request.field_violations[0].field == bad.field
        assert policy.decisions == 1  # nothing malformed ever reached the policy


async def test_patch_bytes_count_against_the_frame_limit() -> None:
    policy = RecordingPolicy([WAIT, ANSWER])
    big = noise(400, 300, 4)
    async with running_daemon([policy], max_frame_bytes=MIB, max_message_bytes=4 * MIB) as daemon:
        stream = daemon.stream()
        await stream.start()
        step = (await stream.observe(full_frame("f1", Image.new("RGB", (400, 300))))).actions
        # Three patches of ~360 KB: each under the limit, together over it.
        wire = delta("f2", "f1", *[patch(0, 0, big)] * 3, width=400, height=300)
        await stream.observe_nowait(wire, ok_results(step))
        error = await stream.error()
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert f"above the frame limit of {MIB}" in (error.details() or "")


async def test_an_old_frame_out_of_the_window_is_no_base() -> None:
    policy = RecordingPolicy([WAIT] * 6 + [ANSWER])
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        await stream.start()
        step = (await stream.observe(full_frame("f1", noise(WIDTH, HEIGHT, 1)))).actions
        for index in range(2, 6):  # the holo window keeps up to 4 frames: f1 drops out
            step = (
                await stream.observe(
                    delta(f"f{index}", "f1" if index < 4 else "f3"), ok_results(step)
                )
            ).actions
        await stream.observe_nowait(delta("f6", "f1"), ok_results(step))
        error = await stream.error()
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        details = error.details() or ""
        assert "unknown base frame 'f1'" in details
        assert "'f2', 'f3', 'f4', 'f5'" in details


async def test_locate_refuses_a_delta_frame() -> None:
    policy = RecordingPolicy([])
    async with running_daemon([policy]) as daemon:
        request = agent_pb2.LocateRequest(frame=delta("f1", "f0"), descriptions=["OK"])
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await daemon.agent.Locate(request)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (caught.value.details() or "").startswith("frame.base_frame_id: delta frames")


async def test_after_a_resume_the_frame_in_flight_is_gone_but_held_frames_are_bases() -> None:
    """A drop while step 2 is decided detaches the session and forgets f2 (its step was
    never decided): a delta on f2 is refused, which is why the client's first frame on a
    new stream is always full. A base the daemon still holds (f1) remains valid."""
    for base, accepted in (("f2", False), ("f1", True)):
        policy = RecordingPolicy([WAIT, WAIT, ANSWER])
        deciding = policy.thinking
        async with running_daemon([policy]) as daemon, proxied(daemon) as (proxy, channel):
            stream = Stream(channel)
            started = await stream.start()
            step = (await stream.observe(full_frame("f1", noise(WIDTH, HEIGHT, 1)))).actions
            policy.block = True
            deciding.clear()
            await stream.observe_nowait(full_frame("f2", noise(WIDTH, HEIGHT, 2)), ok_results(step))
            await asyncio.wait_for(deciding.wait(), 30)  # step 2 is being decided
            await proxy.reset_all()
            await wait_until(lambda: not the_session(daemon).attached, "the session to detach")
            policy.block = False
            again = daemon.stream()
            resumed = await again.start("", resume_token=started.resume_token)
            assert resumed.resumed
            if accepted:
                step = (await again.observe(delta("f3", base))).actions
                assert step.step == 2
                assert policy.contexts[-1].frame.data == policy.contexts[0].frame.data
            else:
                await again.observe_nowait(delta("f3", base))
                error = await again.error()
                assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert "after a reconnect send a full frame first" in (error.details() or "")


def rebuilt_with(
    base_data: bytes, size: Size, at: tuple[int, int], pixels: Image.Image
) -> EncodedFrame:
    """The daemon's rebuild of frame "d": `pixels` (as RGB PNG) painted at `at` over base "b"."""
    base = EncodedFrame("b", size, ImageEncoding.PNG, base_data)
    rect = Rect(at[0], at[1], pixels.width, pixels.height)
    wire = frame_deltas.FrameDelta(
        frame_id="d",
        size=size,
        base_frame_id="b",
        patches=(FramePatch(rect, ImageEncoding.PNG, encode(pixels)),),
    )
    return asyncio.run(frame_deltas.resolve(wire, [base], FrameLimits(), "frame"))


def test_rebuild_decodes_any_base_and_keeps_its_bytes_with_the_patch() -> None:
    base_image = noise(40, 30, 5)
    pixels = noise(10, 10, 6)
    base_data = encode(base_image)
    rebuilt = rebuilt_with(base_data, Size(40, 30), (30, 20), pixels)
    expected = np.asarray(base_image).copy()
    expected[20:30, 30:40] = np.asarray(pixels)
    np.testing.assert_array_equal(pixels_of(rebuilt), expected)
    assert (rebuilt.frame_id, rebuilt.size, rebuilt.data) == ("d", Size(40, 30), base_data)
    assert [p.rect for p in rebuilt.patches] == [Rect(30, 20, 10, 10)]


def test_a_rebuilt_screen_of_few_colours_stands_alone_as_indexed_png() -> None:
    """Like the frames the client sends: exact, one byte a pixel (what a recording
    stores, and what a chain is encoded as once it is long)."""
    flat = Image.new("RGB", (64, 48), (236, 236, 236))
    button = Image.new("RGB", (20, 10), (30, 110, 220))
    rebuilt = frame_pixels.standalone(rebuilt_with(encode(flat), Size(64, 48), (8, 8), button))
    assert (rebuilt.encoding, rebuilt.patches) == (ImageEncoding.PNG, ())
    with Image.open(io.BytesIO(rebuilt.data)) as image:
        assert image.mode == "P"
    expected = np.asarray(flat).copy()
    expected[8:18, 8:28] = np.asarray(button)
    np.testing.assert_array_equal(decoded(rebuilt.data), expected)


def few_colours(width: int, height: int, colours: int, seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    palette = rng.integers(0, 256, (colours, 3), dtype=np.uint8)
    return Image.fromarray(palette[rng.integers(0, colours, (height, width))])


@pytest.mark.parametrize(
    ("base_colours", "patch_colours", "stored_as"),
    [
        (200, 20, ("PNG", "P")),  # the patch's colours join the base's palette
        (250, 20, ("WEBP", "RGB")),  # 270 colours: no palette holds them
        (250, 0, ("PNG", "P")),  # the patch repaints with the base's own colours
    ],
)
def test_a_rebuild_on_an_indexed_base_is_exact_whether_or_not_the_palette_holds_it(
    base_colours: int, patch_colours: int, stored_as: tuple[str, str]
) -> None:
    base_image = few_colours(120, 80, base_colours, seed=1)
    pixels = (
        few_colours(30, 20, patch_colours, seed=2)
        if patch_colours
        else base_image.crop((50, 40, 80, 60)).transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    )
    # The base as the daemon holds a client's frame (indexed), the patch as RGB PNG.
    rebuilt = rebuilt_with(encode_png(base_image), Size(120, 80), (5, 7), pixels)
    expected = np.asarray(base_image).copy()
    expected[7:27, 5:35] = np.asarray(pixels)
    np.testing.assert_array_equal(pixels_of(rebuilt), expected)
    flat = frame_pixels.standalone(rebuilt)
    np.testing.assert_array_equal(decoded(flat.data), expected)
    with Image.open(io.BytesIO(flat.data)) as image:
        assert (image.format, image.mode) == stored_as


def test_deltas_are_on_by_default_and_a_flag_turns_them_off() -> None:
    assert config_from_args(build_parser().parse_args([])).frame_deltas
    assert not config_from_args(build_parser().parse_args(["--no-frame-deltas"])).frame_deltas


def _chain_of(
    steps: int,
    patch_for: Callable[[int], Image.Image],
    screens: DecodedScreens | None = None,
) -> list[EncodedFrame]:
    """`steps` deltas, each painting patch_for(i) at (i % 50, i % 40) of the one before."""
    base = EncodedFrame(
        "f0", Size(WIDTH, HEIGHT), ImageEncoding.PNG, encode(noise(WIDTH, HEIGHT, 0))
    )
    frames = [base]
    for index in range(1, steps + 1):
        pixels = patch_for(index)
        rect = Rect(index % 50, index % 40, pixels.width, pixels.height)
        wire = frame_deltas.FrameDelta(
            frame_id=f"f{index}",
            size=base.size,
            base_frame_id=frames[-1].frame_id,
            patches=(FramePatch(rect, ImageEncoding.PNG, encode(pixels)),),
        )
        resolved = frame_deltas.resolve(wire, frames[-1:], FrameLimits(), "f", screens)
        frames.append(asyncio.run(resolved))
    return frames


def _expected(
    frames: list[EncodedFrame], patch_for: Callable[[int], Image.Image]
) -> list[np.ndarray]:
    canvas = Image.open(io.BytesIO(frames[0].data)).convert("RGB")
    shown = [np.asarray(canvas)]
    for index in range(1, len(frames)):
        canvas = canvas.copy()
        canvas.paste(patch_for(index), (index % 50, index % 40))
        shown.append(np.asarray(canvas))
    return shown


def test_a_long_chain_of_patches_is_encoded_once_as_a_new_image() -> None:
    """Each changed step keeps its base's bytes and adds its patch: no re-encode of the
    screen (40-60 ms at 1080p) until the chain is MAX_CHAIN_PATCHES long; then one
    lossless image, exact, and the chain starts again on it."""

    def dot(index: int) -> Image.Image:
        return Image.new("RGB", (1, 1), (index * 3 % 256, 7, 200))

    steps = frame_deltas.MAX_CHAIN_PATCHES + 10
    frames = _chain_of(steps, dot)
    lengths = [len(f.patches) for f in frames]
    assert max(lengths) == frame_deltas.MAX_CHAIN_PATCHES
    anchored = [i for i, f in enumerate(frames) if i and not f.patches]
    assert anchored == [frame_deltas.MAX_CHAIN_PATCHES + 1]
    assert all(f.data is frames[0].data for f in frames[: anchored[0]])
    for frame, expected in zip(frames, _expected(frames, dot), strict=True):
        np.testing.assert_array_equal(pixels_of(frame), expected)


def test_patches_weighing_half_their_base_make_a_new_image(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Big changes: painting them on every decode would cost more than a new image.
    (The tiny test screens weigh less than the floor below which a chain is kept.)"""
    monkeypatch.setattr(frame_deltas, "MIN_CHAIN_BYTES", 0)

    def block(index: int) -> Image.Image:
        return noise(24, 8, seed=index)  # ~0.6 KiB as PNG, the base ~9 KiB

    frames = _chain_of(12, block)
    assert any(i and not f.patches for i, f in enumerate(frames))
    for frame in frames:
        patch_bytes = frame.nbytes - len(frame.data)
        assert patch_bytes <= frame_deltas.MAX_CHAIN_SHARE * len(frame.data)
    for frame, expected in zip(frames, _expected(frames, block), strict=True):
        np.testing.assert_array_equal(pixels_of(frame), expected)


def test_a_chain_on_a_light_image_keeps_its_patches_up_to_the_floor() -> None:
    """A screen of few colours is a few KiB: typing on it must not re-encode it every
    other step. Its chain grows past half its bytes, up to MIN_CHAIN_BYTES."""

    def block(index: int) -> Image.Image:
        return noise(24, 8, seed=index)

    frames = _chain_of(12, block)
    last = frames[-1]
    assert len(last.patches) == 12
    assert last.nbytes - len(last.data) > frame_deltas.MAX_CHAIN_SHARE * len(last.data)
    np.testing.assert_array_equal(pixels_of(last), _expected(frames, block)[-1])


def test_a_screen_painted_in_two_steps_has_the_key_of_one_painted_in_one() -> None:
    """The content key names the pixels' history, not the route: the same base and the
    same patches are the same key however the steps split them, and a frame made
    with patches by hand gets the same key (never its base's)."""
    base = EncodedFrame(
        "b", Size(WIDTH, HEIGHT), ImageEncoding.PNG, encode(noise(WIDTH, HEIGHT, 1))
    )
    one, two = (
        FramePatch(Rect(x, 0, 4, 4), ImageEncoding.PNG, encode(noise(4, 4, x))) for x in (0, 10)
    )
    stepwise = base.painted("s1", (one,)).painted("s2", (two,))
    at_once = base.painted("a", (one, two))
    by_hand = EncodedFrame("h", base.size, base.encoding, base.data, patches=(one, two))
    assert stepwise.content_key == at_once.content_key == by_hand.content_key
    assert stepwise.content_key != base.content_key
    assert base.painted("o", (one,)).content_key not in (base.content_key, at_once.content_key)


@pytest.mark.abuse
@pytest.mark.parametrize(
    "corrupt",
    [
        pytest.param(lambda png: png[: len(png) // 2], id="truncated"),
        pytest.param(
            lambda png: png[:60] + bytes(b ^ 0xFF for b in png[60:200]) + png[200:],
            id="broken data stream",
        ),
    ],
)
async def test_a_frame_whose_body_does_not_decode_is_invalid_argument_naming_it(
    corrupt: Callable[[bytes], bytes],
) -> None:
    """A valid PNG header and then junk passes the header check; the model image's
    decode finds it. The caller's error, INVALID_ARGUMENT naming the frame (it was
    INTERNAL "OSError: broken data stream")."""
    engine = ScriptedEngine([WAIT, WAIT], processes_images=True)
    policy = ModelPolicy(get_dialect("holotron"), engine, name="holotron")
    data = corrupt(encode(noise(WIDTH, HEIGHT, 1)))
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        await stream.start()
        await stream.observe_nowait(make_frame("f1", WIDTH, HEIGHT, data=data))
        error = await stream.error()
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert "frame 'f1' cannot be decoded" in (error.details() or "")
    request = error_details_pb2.BadRequest()
    assert rich_status(error).details[0].Unpack(request)
    assert request.field_violations[0].field == "frame.data"


def test_a_chain_rebuilt_on_screens_that_left_the_raw_tier_shows_exactly_its_patches() -> None:
    """With a hundred sessions the raw tier holds none of a session's screens by its
    next step: each is then painted band by band on the packed one before it. The
    frames and pixels must be those of the raw path."""
    screens = DecodedScreens(hot_bytes=0)

    def patch_for(index: int) -> Image.Image:
        return noise(10 + index, 7, seed=index)

    frames = _chain_of(5, patch_for, screens)
    assert screens.unpacks == 0  # f2 on: painted packed (f1 decoded f0, which was not kept)
    expected = _expected(frames, patch_for)
    # A session keeps its newest few screens.
    for frame, shown in list(zip(frames, expected, strict=True))[-screens.screens_per_session :]:
        kept = screens.peek(frame.content_key)
        assert kept is not None
        np.testing.assert_array_equal(np.asarray(kept), shown)
        np.testing.assert_array_equal(pixels_of(frame), shown)
