"""Each screen is prepared once: decoded once, resized once, named by its content."""

from __future__ import annotations

import io
import threading

import numpy as np
import pytest
from PIL import Image, ImageDraw

from holodesk.daemon import frame_pixels
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.dialects.coords import SmartResize, TileResize
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.frames import EncodedFrame, FramePatch, ImageEncoding
from holodesk.daemon.geometry import Rect, Size
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.session.decoded_screens import DecodedScreens
from tests.daemon.support import ok_results, running_daemon
from tests.daemon.test_daemon_deltas import (
    HEIGHT,
    WAIT,
    WIDTH,
    delta,
    encode,
    full_frame,
    noise,
    patch,
)


def _screen(width: int, height: int) -> Image.Image:
    image = Image.new("RGB", (width, height), (236, 238, 240))
    draw = ImageDraw.Draw(image)
    for row in range(0, height, 40):
        draw.text((20, row + 10), f"line {row} of a text-dense window", fill=(30, 60, row % 255))
    return image


def _frame(image: Image.Image, frame_id: str = "f1") -> EncodedFrame:
    size = Size(image.width, image.height)
    return EncodedFrame(frame_id, size, ImageEncoding.PNG, encode(image))


def test_tile_and_smart_rules_agree_with_the_processor_on_common_screens() -> None:
    tiles = TileResize()
    for width, height in ((1920, 1080), (1280, 800), (2560, 1440), (3840, 2160), (1024, 768)):
        assert tiles.processor_agrees(Size(width, height)), (width, height)
    # The processor's one-shot grid for this image is 3x3, its grid's own grid 4x4.
    assert not TileResize(max_tiles=16).processor_agrees(Size(1058, 1115))
    smart = SmartResize(factor=28, min_pixels=3136, max_pixels=1003520)
    assert smart.processor_agrees(Size(1920, 1080))
    assert not smart.processor_agrees(Size(20, 1080))  # a side under one factor
    assert not smart.processor_agrees(Size(28, 56_000))  # Qwen raises past 200:1


def test_an_in_process_engine_gets_the_frame_as_it_is_and_resizes_it_itself() -> None:
    """holotron (0-1000 coordinates, Nemotron tiles) at 1080p: the model's image is
    2048x1024, but an engine running the model's processor gets the 1920x1080 pixels
    (the processor resizes them anyway); bytes for a remote engine are still 2048x1024."""
    dialect = get_dialect("holotron")
    frame = _frame(_screen(1920, 1080))
    left = dialect.model_image(frame, engine_resizes=True)
    assert (left.width, left.height) == (2048, 1024)
    assert left.pixels().size == (1920, 1080)
    assert left.content_id == frame.content_key
    with Image.open(io.BytesIO(left.encoded())) as sent:
        assert sent.size == (2048, 1024)
    resized = dialect.model_image(frame)
    assert resized.pixels().size == (2048, 1024)
    assert resized.content_id == f"{frame.content_key}@2048x1024"


def test_without_pixels_an_image_is_decoded_only_when_an_engine_asks(
    decodes: list[int],
) -> None:
    """A model image holds no pixels, only the frame's bytes (the cache counts them),
    and decodes the frame each time it is asked, never before, unless the daemon
    still has the screen decoded."""
    frame = _frame(_screen(1920, 1080))
    part = get_dialect("holotron").model_image(frame, engine_resizes=True)
    assert part.image is None
    assert part.nbytes == len(frame.data)
    assert decodes == []
    first, second = part.pixels(), part.pixels()
    assert len(decodes) == 2
    assert np.array_equal(np.asarray(first), np.asarray(second))
    screens = DecodedScreens()
    screens.keep(frame.content_key, _screen(1920, 1080))
    known = get_dialect("holotron").model_image(frame, engine_resizes=True, decoded=screens.peek)
    assert known.image is None  # still lazy: no model image holds pixels of its own
    assert known.pixels().size == (1920, 1080)
    assert len(decodes) == 2  # the daemon had the screen decoded: not decoded again


@pytest.mark.parametrize("name", ["holo1.5", "uitars"])
def test_a_dialect_answering_in_resized_pixels_keeps_its_own_resize(name: str) -> None:
    """Its clicks are pixels of the exact image it saw: that size is never left to a
    processor whose settings the daemon cannot see."""
    dialect = get_dialect(name)
    frame = _frame(_screen(1920, 1080))
    part = dialect.model_image(frame, engine_resizes=True)
    seen = dialect.geometry(frame.size).model_image
    assert part.pixels().size == (seen.width, seen.height)
    assert part.content_id == f"{frame.content_key}@{seen.width}x{seen.height}"


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the frames the dialect decodes to make model images."""
    counted: list[int] = []
    decode = frame_pixels.decode

    def counting(frame: EncodedFrame, field: str = "frame.data") -> Image.Image:
        if field == "frame.data":  # a model image's (a delta's rebuild names its field)
            counted.append(len(frame.data))
        return decode(frame, field)

    monkeypatch.setattr(frame_pixels, "decode", counting)
    return counted


async def test_a_rebuilt_delta_is_decoded_once_and_an_unchanged_screen_not_at_all(
    decodes: list[int],
) -> None:
    """The delta rebuild's pixels are the model's input (from the daemon's decoded
    screens): no second decode of the frame it just encoded, and they are exactly
    the rebuilt frame's pixels."""
    outputs = [WAIT] * 4
    engine = ScriptedEngine(outputs, processes_images=True)
    policy = ModelPolicy(get_dialect("holotron"), engine, name="holotron")
    base = noise(WIDTH, HEIGHT, seed=1)
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        await stream.start()
        step = (await stream.observe(full_frame("f1", base))).actions
        assert len(decodes) == 1  # a full frame: decoded once, when the engine took it
        painted = noise(20, 10, seed=2)
        changed = delta("f2", "f1", patch(30, 20, painted))
        step = (await stream.observe(changed, ok_results(step))).actions
        # The rebuild's own pixels were used, and the engine (like vLLM's processor
        # cache) did not ask again for the screen it had already processed.
        assert len(decodes) == 1
        unchanged = delta("f3", "f2")
        await stream.observe(unchanged, ok_results(step))
        assert len(decodes) == 1
        # Windows f1 | f1 f2 | f1 f2 f3, where f3 shows f2: 2 images made, 4 reused.
        assert (policy.image_cache.misses, policy.image_cache.hits) == (2, 4)
        newest = engine.requests[-1].messages[-1].images[-1]
        expected = base.copy()
        expected.paste(painted, (30, 20))
        assert np.array_equal(np.asarray(newest.pixels()), np.asarray(expected))
        assert newest.content_id == engine.requests[-2].messages[-1].images[-1].content_id


def test_an_unchanged_screen_shares_its_bases_bytes_and_content_key() -> None:
    """A delta without patches costs no copy and no second hash of ~0.5 MiB."""
    base = _frame(_screen(320, 200))
    key = base.content_key
    same = base.renamed("f2")
    assert same.frame_id == "f2"
    assert same.data is base.data
    assert same.__dict__["content_key"] == key  # carried over, not computed again


@pytest.mark.parametrize(("cache_bytes", "decoded_bases"), [(256 << 20, 1), (0, 3)])
async def test_a_delta_on_the_screen_rebuilt_last_paints_on_it_without_decoding_it(
    monkeypatch: pytest.MonkeyPatch, cache_bytes: int, decoded_bases: int
) -> None:
    """Each changed step used to decode its base, which the previous step had just
    rebuilt: now only the first delta of a stream decodes (its full frame's bytes).
    Without the cache (--decoded-screens-mb 0) a delta's base is made again, from
    the image of its chain: decoded, unless the worker thread that rebuilds it
    decoded part of that chain last (which thread runs it is up to the pool)."""
    decoded: list[str] = []
    decode = frame_pixels.decode_bytes

    def counting(data: bytes, field_name: str, what: str) -> Image.Image:
        decoded.append(what)
        return decode(data, field_name, what)

    monkeypatch.setattr(frame_pixels, "decode_bytes", counting)
    policy = ModelPolicy(get_dialect("holotron"), ScriptedEngine([WAIT] * 4), name="holotron")
    base = noise(WIDTH, HEIGHT, seed=1)
    async with running_daemon([policy], decoded_screen_bytes=cache_bytes) as daemon:
        stream = daemon.stream()
        await stream.start()
        step = (await stream.observe(full_frame("f1", base))).actions
        expected = base.copy()
        for index, seed in enumerate((2, 3, 4), start=2):
            painted = noise(10, 6, seed=seed)
            expected.paste(painted, (index * 5, index * 3))
            wire = delta(f"f{index}", f"f{index - 1}", patch(index * 5, index * 3, painted))
            step = (await stream.observe(wire, ok_results(step))).actions
        bases = [what for what in decoded if what.startswith("frame '")]
        assert bases[0] == "frame 'f1'"
        assert 1 <= len(bases) <= decoded_bases
        if decoded_bases == 1:
            assert bases == ["frame 'f1'"]
        session = next(iter(daemon.running.registry.list()))
        newest = session.frames[-1]
        assert np.array_equal(
            np.asarray(frame_pixels.decode(newest).convert("RGB")), np.asarray(expected)
        )


def test_a_frame_extending_the_last_one_decoded_is_painted_on_a_copy_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An engine asking again for a window's screens (its processor cache evicted
    them) gets them oldest first: one decode of the chain's image, then each next
    frame is the last one's pixels plus its own patches. The pixels handed out are
    never painted on afterwards."""
    decoded: list[str] = []
    decode = frame_pixels.decode_bytes

    def counting(data: bytes, field_name: str, what: str) -> Image.Image:
        decoded.append(what)
        return decode(data, field_name, what)

    monkeypatch.setattr(frame_pixels, "decode_bytes", counting)
    base_image = noise(WIDTH, HEIGHT, seed=1)
    first = _frame(base_image, "f0")
    patches = [
        FramePatch(Rect(4 * i, 3 * i, 10, 6), ImageEncoding.PNG, encode(noise(10, 6, seed=i)))
        for i in range(1, 4)
    ]
    chain = [first]
    for index, painted in enumerate(patches, start=1):
        chain.append(chain[-1].painted(f"f{index}", (painted,)))
    expected = [np.asarray(base_image)]
    for painted in patches:
        shown = Image.fromarray(expected[-1])
        pixels = Image.open(io.BytesIO(painted.data)).convert("RGB")
        shown.paste(pixels, (painted.rect.x, painted.rect.y))
        expected.append(np.asarray(shown))

    results: list[np.ndarray] = []

    def oldest_first() -> None:
        images = [frame_pixels.decode(frame) for frame in chain]  # all first: none repainted
        results.extend(np.asarray(image.convert("RGB")) for image in images)
        frame_pixels.decode(chain[0])  # not an extension of f3: decoded again

    worker = threading.Thread(target=oldest_first)  # a fresh thread: nothing decoded yet
    worker.start()
    worker.join()
    frames_decoded = [what for what in decoded if what.startswith("frame '")]
    assert frames_decoded == ["frame 'f0'", "frame 'f0'"]
    for got, want in zip(results, expected, strict=True):
        np.testing.assert_array_equal(got, want)
