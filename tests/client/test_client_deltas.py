"""Delta frames, client to daemon: what the daemon rebuilds is what the client meant.

Frames go the whole way: FrameCapturer (fake screen) -> client convert -> protobuf
bytes -> daemon convert -> frame_deltas.resolve against the frames the daemon holds.
"""

from __future__ import annotations

import asyncio
import io
from collections import deque
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from PIL import Image

from holodesk.client import convert as client_convert
from holodesk.client.capture import FrameCapturer, downsize, encode_within, fit_size
from holodesk.client.deltas import MAX_PATCHES, DeltaEncoder, merge_boxes, tile_bands, tile_boxes
from holodesk.client.frames import FrameSpec, SentFrame
from holodesk.client.resize import Box, Downsizer, usable_cores
from holodesk.daemon import convert as daemon_convert
from holodesk.daemon import frame_pixels
from holodesk.daemon.frames import EncodedFrame, FrameLimits
from holodesk.daemon.session import frame_deltas
from holodesk.platform.backends.fake import FakeScreen
from holodesk.platform.base import DisplayInfo, Region, RowBands
from holodesk.platform.mss_grabber import row_bands
from holodesk.proto.v1 import frame_pb2
from holodesk.values.encoding import ImageEncoding
from tests.support import client_wire

LIMITS = FrameLimits(max_bytes=1 << 24, max_pixels=1 << 26)


class Daemon:
    """The daemon's half: converts each frame off the wire and rebuilds deltas."""

    def __init__(self, window: int = 3) -> None:
        self.held: deque[EncodedFrame] = deque(maxlen=window)

    def receive(self, sent: SentFrame) -> EncodedFrame:
        wire = frame_pb2.Frame.FromString(client_convert.frame_to_pb(sent).SerializeToString())
        if wire.base_frame_id:
            delta = daemon_convert.frame_delta_from_pb(wire, "observation.frame")
            frame = asyncio.run(frame_deltas.resolve(delta, self.held, LIMITS, "observation.frame"))
        else:
            frame = daemon_convert.frame_from_pb(wire, "observation.frame")
        self.held.append(frame)
        return frame


def pixels(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"))


def shown(frame: EncodedFrame) -> np.ndarray:
    """What a frame the daemon holds shows (a rebuilt one: its base with its patches)."""
    return np.asarray(frame_pixels.decode(frame).convert("RGB"))


def screen_of(width: int, height: int) -> FakeScreen:
    display = DisplayInfo("main", Region(0, 0, width, height), 1.0, primary=True, name="main")
    return FakeScreen([display], Image.new("RGB", (width, height), (236, 236, 236)))


def paint(screen: FakeScreen, box: tuple[int, int, int, int], seed: int, noise: bool) -> None:
    left, top, right, bottom = box
    rng = np.random.default_rng(seed)
    shape = (bottom - top, right - left, 3)
    if noise:
        block = rng.integers(0, 256, shape, dtype=np.uint8)
    else:
        block = np.broadcast_to(rng.integers(0, 256, 3, dtype=np.uint8), shape).copy()
    screen.image.paste(Image.fromarray(block), (left, top))


@dataclass(frozen=True)
class Scenario:
    width: int
    height: int
    box: tuple[int, int]
    # Per step: the painted rectangles (left, top, right, bottom, seed, noise).
    steps: tuple[tuple[tuple[int, int, int, int, int, bool], ...], ...]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    width = draw(st.integers(8, 160))
    height = draw(st.integers(8, 120))
    # No limit (sent at full size), a mild shrink, or one past the 4x box-reduce.
    box_width = draw(st.sampled_from([0, max(1, width * 3 // 4), max(1, width // 5)]))
    box_width = draw(st.one_of(st.just(box_width), st.integers(1, width)))

    def rect() -> tuple[int, int, int, int, int, bool]:
        left = draw(st.integers(0, width - 1))
        top = draw(st.integers(0, height - 1))
        right = draw(st.integers(left + 1, min(width, left + draw(st.integers(1, width)))))
        bottom = draw(st.integers(top + 1, min(height, top + draw(st.integers(1, height)))))
        return (left, top, right, bottom, draw(st.integers(0, 2**31)), draw(st.booleans()))

    steps = draw(
        st.lists(st.lists(st.builds(rect), min_size=0, max_size=4), min_size=1, max_size=6)
    )
    return Scenario(width, height, (box_width, 0), tuple(tuple(s) for s in steps))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios())
def test_the_rebuilt_frame_is_the_clients_full_downsized_frame(scenario: Scenario) -> None:
    screen = screen_of(scenario.width, scenario.height)
    paint(screen, (0, 0, scenario.width // 2, scenario.height // 2), 1, noise=True)
    spec = FrameSpec(max_width=scenario.box[0], encoding=ImageEncoding.PNG, accept_deltas=True)
    capturer = FrameCapturer(screen, spec)
    daemon = Daemon()
    size = fit_size(scenario.width, scenario.height, spec.max_width, spec.max_height)
    for changes in ((), *scenario.steps):
        for left, top, right, bottom, seed, noise in changes:
            paint(screen, (left, top, right, bottom), seed, noise)
        sent = capturer.capture()
        event("patches" if sent.patches else "unchanged" if sent.is_delta else "full")
        rebuilt = daemon.receive(sent)
        expected = np.asarray(downsize(screen.image, size))
        assert rebuilt.frame_id == sent.frame_id
        assert (rebuilt.size.width, rebuilt.size.height) == size
        np.testing.assert_array_equal(shown(rebuilt), expected)


def _changed_bands(before: np.ndarray, after: np.ndarray) -> RowBands:
    return row_bands((before != after).any(axis=(1, 2)))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios(), widen=st.integers(0, 50), max_bands=st.integers(1, 4))
def test_changed_rows_from_the_screen_source_give_the_same_frames(
    scenario: Scenario, widen: int, max_bands: int
) -> None:
    """A Grab's changed rows (exact bands, bands joined across gaps, or one span wider
    than the change) only narrow the search: the encoder sends exactly what it sends
    when it compares whole screens."""
    screen = screen_of(scenario.width, scenario.height)
    paint(screen, (0, 0, scenario.width // 2, scenario.height // 2), 1, noise=True)
    spec = FrameSpec(max_width=scenario.box[0], encoding=ImageEncoding.PNG, accept_deltas=True)
    size = fit_size(scenario.width, scenario.height, spec.max_width, spec.max_height)

    def encoder() -> DeltaEncoder:
        return DeltaEncoder(spec, lambda frame: encode_within(frame, spec))

    compared, exact, joined, wide = encoder(), encoder(), encoder(), encoder()
    before = np.asarray(screen.image).copy()
    for index, changes in enumerate(((), *scenario.steps)):
        for left, top, right, bottom, seed, noise in changes:
            paint(screen, (left, top, right, bottom), seed, noise)
        image = screen.image.copy()
        after = np.asarray(image)
        bands = _changed_bands(before, after)
        few = row_bands((before != after).any(axis=(1, 2)), max_bands=max_bands)
        wider = ((max(0, bands[0][0] - widen), bands[-1][1] + widen),) if bands else ()
        frame_id, geometry = f"f{index}", "main"
        sent = compared.encode(image, size, frame_id, geometry)
        assert exact.encode(image, size, frame_id, geometry, bands) == sent
        assert joined.encode(image, size, frame_id, geometry, few) == sent
        assert wide.encode(image, size, frame_id, geometry, wider) == sent
        before = after


def test_changed_rows_become_bands_joined_across_the_smallest_gaps() -> None:
    changed = np.zeros(100, dtype=bool)
    for top, bottom in ((2, 5), (10, 11), (40, 50), (52, 53), (90, 100)):
        changed[top:bottom] = True
    assert row_bands(changed) == ((2, 5), (10, 11), (40, 50), (52, 53), (90, 100))
    assert row_bands(changed, max_bands=3) == ((2, 11), (40, 53), (90, 100))
    assert row_bands(changed, max_bands=1) == ((2, 100),)
    assert row_bands(np.zeros(10, dtype=bool)) == ()


def test_bands_are_widened_to_rows_of_tiles_and_joined_where_they_touch() -> None:
    assert tile_bands(((5, 6), (40, 41), (200, 210)), 32, 220) == ((0, 64), (192, 220))
    assert tile_bands(((5, 6), (70, 71)), 32, 220) == ((0, 32), (64, 96))
    assert tile_bands(((3, 3),), 32, 220) == ()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios(), encoding=st.sampled_from([ImageEncoding.JPEG, ImageEncoding.WEBP]))
def test_lossy_frames_never_drift(scenario: Scenario, encoding: ImageEncoding) -> None:
    """Every pixel is either exact or the last full frame's decode of its unchanged value."""
    screen = screen_of(scenario.width, scenario.height)
    paint(screen, (0, 0, scenario.width, scenario.height), 3, noise=True)
    spec = FrameSpec(max_width=scenario.box[0], encoding=encoding, quality=40, accept_deltas=True)
    capturer = FrameCapturer(screen, spec)
    daemon = Daemon()
    size = fit_size(scenario.width, scenario.height, spec.max_width, spec.max_height)
    full_truth = full_decoded = np.zeros(0)
    for changes in ((), *scenario.steps):
        for left, top, right, bottom, seed, noise in changes:
            paint(screen, (left, top, right, bottom), seed, noise)
        sent = capturer.capture()
        rebuilt = shown(daemon.receive(sent))
        truth = np.asarray(downsize(screen.image, size))
        if not sent.is_delta:
            full_truth, full_decoded = truth, pixels(sent.data)
            assert rebuilt.tobytes() == full_decoded.tobytes()
            continue
        exact = (rebuilt == truth).all(axis=2)
        kept = (rebuilt == full_decoded).all(axis=2) & (truth == full_truth).all(axis=2)
        assert (exact | kept).all()
        # Whatever changed since the last full frame arrived exactly.
        changed = (truth != full_truth).any(axis=2)
        assert exact[changed].all()


def test_an_unchanged_screen_is_a_delta_without_patches() -> None:
    screen = screen_of(640, 400)
    paint(screen, (20, 20, 300, 200), 5, noise=True)
    capturer = FrameCapturer(screen, FrameSpec(max_width=400, accept_deltas=True))
    first, second, third = capturer.capture(), capturer.capture(), capturer.capture()
    assert not first.is_delta
    assert first.data
    assert second.base_frame_id == first.frame_id
    assert third.base_frame_id == second.frame_id  # always on the previous frame
    assert (second.patches, second.data, second.wire_bytes) == ((), b"", 0)
    wire = client_convert.frame_to_pb(second)
    assert wire.encoding == frame_pb2.IMAGE_ENCODING_UNSPECIFIED
    assert (wire.data, wire.base_frame_id) == (b"", first.frame_id)


def test_a_small_change_is_one_small_patch_at_frame_resolution() -> None:
    screen = screen_of(1280, 800)
    paint(screen, (0, 0, 1280, 800), 8, noise=True)
    capturer = FrameCapturer(screen, FrameSpec(max_width=640, accept_deltas=True))
    first = capturer.capture()
    paint(screen, (600, 300, 610, 320), 9, noise=False)  # a caret, a glyph
    second = capturer.capture()
    assert second.base_frame_id == first.frame_id
    assert len(second.patches) == 1
    patch = second.patches[0]
    # The 10x20 screen change at half size, widened by the Lanczos support only.
    assert 296 <= patch.x <= 300
    assert 305 <= patch.x + patch.width <= 309
    assert 146 <= patch.y <= 150
    assert 160 <= patch.y + patch.height <= 164
    assert patch.encoding is ImageEncoding.PNG
    assert second.wire_bytes < len(first.data) // 20


def test_separate_changes_are_separate_patches_and_many_are_merged() -> None:
    screen = screen_of(800, 600)
    # Busy enough that a full frame costs more than patches (a flat screen is a few
    # bytes as an indexed PNG).
    paint(screen, (0, 0, 800, 600), 9, noise=True)
    capturer = FrameCapturer(screen, FrameSpec(accept_deltas=True))
    capturer.capture()
    paint(screen, (10, 10, 20, 20), 1, noise=False)
    paint(screen, (700, 500, 720, 510), 2, noise=False)
    two = capturer.capture()
    assert sorted((p.x, p.y, p.width, p.height) for p in two.patches) == [
        (10, 10, 10, 10),
        (700, 500, 20, 10),
    ]
    for i in range(40):  # 40 scattered one-pixel changes
        x, y = 5 + (i % 8) * 97, 5 + (i // 8) * 110
        paint(screen, (x, y, x + 1, y + 1), 100 + i, noise=False)
    many = capturer.capture()
    assert 1 <= len(many.patches) <= MAX_PATCHES


def test_a_mostly_changed_screen_or_costly_patches_send_a_full_frame() -> None:
    screen = screen_of(400, 300)
    capturer = FrameCapturer(screen, FrameSpec(accept_deltas=True))
    capturer.capture()
    paint(screen, (0, 0, 400, 200), 4, noise=False)  # two thirds of the screen
    assert not capturer.capture().is_delta
    # Noise compresses worse as a patch than the whole, mostly flat, frame did.
    paint(screen, (0, 0, 400, 300), 0, noise=False)
    capturer.capture()
    paint(screen, (0, 0, 190, 150), 5, noise=True)
    noisy = capturer.capture()
    assert not noisy.is_delta


def test_another_display_or_size_starts_from_a_full_frame() -> None:
    displays = [
        DisplayInfo("a", Region(0, 0, 320, 200), 1.0, primary=True, name="a"),
        DisplayInfo("b", Region(320, 0, 320, 200), 1.0, name="b"),
    ]
    screen = FakeScreen(displays, Image.new("RGB", (640, 200), (10, 20, 30)))
    on_a = FrameCapturer(screen, FrameSpec(accept_deltas=True), "a")
    on_b = FrameCapturer(screen, FrameSpec(accept_deltas=True), "b")
    assert not on_a.capture().is_delta
    assert on_a.capture().is_delta
    assert not on_b.capture().is_delta  # its own stream of frames


def test_a_new_capturer_a_new_stream_after_a_reconnect_sends_a_full_frame_first() -> None:
    screen = screen_of(320, 200)
    spec = FrameSpec(accept_deltas=True)
    old = FrameCapturer(screen, spec)
    old.capture()
    assert old.capture().is_delta
    # session.py makes one capturer per stream: the daemon may not hold the old base.
    assert not FrameCapturer(screen, spec).capture().is_delta


def test_without_accept_deltas_every_frame_is_full() -> None:
    screen = screen_of(320, 200)
    capturer = FrameCapturer(screen, FrameSpec())
    assert not any(capturer.capture().is_delta for _ in range(3))


def test_webp_sessions_get_lossless_webp_patches() -> None:
    screen = screen_of(320, 200)
    paint(screen, (0, 0, 320, 200), 6, noise=True)  # a full frame costs more than a patch
    capturer = FrameCapturer(screen, FrameSpec(encoding=ImageEncoding.WEBP, accept_deltas=True))
    capturer.capture()
    paint(screen, (10, 10, 40, 30), 7, noise=True)
    (patch,) = capturer.capture().patches
    with Image.open(io.BytesIO(patch.data)) as image:
        assert image.format == "WEBP"
        np.testing.assert_array_equal(
            np.asarray(image.convert("RGB")), np.asarray(screen.image.crop((10, 10, 40, 30)))
        )


def test_frame_spec_accept_deltas_round_trips() -> None:
    spec = FrameSpec(max_width=100, accept_deltas=True)
    assert client_convert.frame_spec_from_pb(client_wire.frame_spec_to_pb(spec)) == spec
    assert not client_convert.frame_spec_from_pb(frame_pb2.FrameSpec()).accept_deltas


def test_delta_frames_round_trip_through_the_clients_converter() -> None:
    screen = screen_of(200, 100)
    capturer = FrameCapturer(screen, FrameSpec(accept_deltas=True))
    capturer.capture()
    paint(screen, (5, 5, 15, 15), 2, noise=True)
    sent = capturer.capture()
    back = client_wire.frame_from_pb(client_convert.frame_to_pb(sent))
    assert back.base_frame_id == sent.base_frame_id
    assert back.patches == sent.patches


@settings(max_examples=150, deadline=None)
@given(
    width=st.integers(1, 300),
    height=st.integers(1, 300),
    shrink=st.floats(0.05, 1.0),
    seed=st.integers(0, 2**31),
    data=st.data(),
)
def test_a_region_is_recomputed_bit_for_bit(
    width: int, height: int, shrink: float, seed: int, data: st.DataObject
) -> None:
    size = (max(1, round(width * shrink)), max(1, round(height * shrink)))
    image = Image.fromarray(
        np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    )
    sizer = Downsizer((width, height), size)
    full = np.asarray(sizer.full(image))
    left = data.draw(st.integers(0, width - 1))
    top = data.draw(st.integers(0, height - 1))
    changed = Box(
        left, top, data.draw(st.integers(left + 1, width)), data.draw(st.integers(top + 1, height))
    )
    target = sizer.affected(changed)
    assert 0 <= target.left <= target.right <= size[0]
    assert 0 <= target.top <= target.bottom <= size[1]
    if target.area:
        region = np.asarray(sizer.region(image, target))
        np.testing.assert_array_equal(
            region, full[target.top : target.bottom, target.left : target.right]
        )


@settings(max_examples=60, deadline=None)
@given(
    width=st.integers(1, 400),
    height=st.integers(1, 400),
    shrink=st.floats(0.05, 1.0),
    workers=st.integers(2, 5),
    seed=st.integers(0, 2**31),
)
def test_a_frame_made_on_several_threads_is_bit_for_bit_the_same(
    width: int, height: int, shrink: float, workers: int, seed: int
) -> None:
    size = (max(1, round(width * shrink)), max(1, round(height * shrink)))
    image = Image.fromarray(
        np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    )
    alone = Downsizer((width, height), size, workers=1).full(image)
    shared = Downsizer((width, height), size, workers=workers).full(image)
    assert shared.size == alone.size == size
    np.testing.assert_array_equal(np.asarray(shared), np.asarray(alone))


def test_only_large_screens_are_downsized_on_several_threads() -> None:
    assert Downsizer((1920, 1080), (1536, 864)).workers == 1
    assert Downsizer((3840, 2160), (1820, 1024)).workers == usable_cores()


def test_changes_are_grouped_into_tile_boxes() -> None:
    grid = np.zeros((4, 6), dtype=bool)
    grid[0, 0] = grid[1, 1] = True  # diagonal neighbours: one group
    grid[3, 5] = True
    assert sorted(tile_boxes(grid, 32, 180, 120), key=lambda b: b.left) == [
        Box(0, 0, 64, 64),
        Box(160, 96, 180, 120),  # clipped to the screen
    ]
    boxes = [Box(i * 10, 0, i * 10 + 5, 5) for i in range(30)]
    merged = merge_boxes(boxes, max_boxes=4)
    assert len(merged) <= 4
    for box in boxes:  # nothing lost
        assert any(m.left <= box.left and box.right <= m.right for m in merged)


@pytest.mark.parametrize("encoding", [ImageEncoding.PNG, ImageEncoding.JPEG])
def test_patches_stay_within_max_bytes_or_the_frame_is_full(encoding: ImageEncoding) -> None:
    screen = screen_of(400, 300)
    spec = FrameSpec(encoding=encoding, max_bytes=400_000, accept_deltas=True)
    capturer = FrameCapturer(screen, spec)
    capturer.capture()
    paint(screen, (0, 0, 150, 150), 11, noise=True)
    sent = capturer.capture()
    assert sent.wire_bytes <= spec.max_bytes
