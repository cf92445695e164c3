"""Model images are made once per frame, and the cache stays within its bytes."""

from __future__ import annotations

import asyncio
import io

import numpy as np
from PIL import Image

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.base import ImagePart
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Size
from holodesk.daemon.policies.base import StepContext
from holodesk.daemon.policies.image_cache import ModelImageCache
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import (
    holo,
    image_bytes,
    make_frame,
    ok_results,
    running_daemon,
    wait_until,
)


def _frame(frame_id: str) -> EncodedFrame:
    return EncodedFrame(frame_id, Size(1280, 720), ImageEncoding.PNG, image_bytes(1280, 720))


def _part(size: int) -> ImagePart:
    return ImagePart(b"x" * size, "image/png", 1, 1)


def test_hits_misses_eviction_and_sessions() -> None:
    made: list[str] = []

    def make(frame: EncodedFrame) -> ImagePart:
        made.append(frame.frame_id)
        return _part(400)

    cache = ModelImageCache(max_bytes=1000)
    a, b, c = _frame("a"), _frame("b"), _frame("c")
    cache.get("s1", a, make)
    cache.get("s1", a, make)
    cache.get("s2", a, make)  # same frame id, another session: another image
    assert made == ["a", "a"]
    assert (cache.hits, cache.misses, cache.bytes) == (1, 2, 800)
    cache.get("s1", b, make)  # 1200 bytes > 1000: the least recently used goes
    assert cache.bytes == 800
    cache.get("s1", a, make)
    assert made == ["a", "a", "b", "a"]
    cache.drop_session("s1")
    assert cache.bytes == 0
    # An image larger than the whole cache is made, returned, never kept.
    huge = ModelImageCache(max_bytes=100)
    assert huge.get("s", c, make).data == b"x" * 400
    assert huge.bytes == 0


def test_a_session_makes_each_frame_image_once() -> None:
    outputs = [holo({"action": "click", "x": 10, "y": 10})] * 4
    policy = ModelPolicy(get_dialect("holotron"), ScriptedEngine(outputs), name="scripted")
    frames = [_frame(f"f{i}") for i in range(1, 5)]

    async def run() -> None:
        await policy.start()
        for step in range(1, 5):
            window = tuple(frames[max(0, step - 3) : step])  # holotron keeps 3 images
            await policy.decide(StepContext("s", "task", step, window))

    asyncio.run(run())
    cache = policy.image_cache
    # Windows f1 | f1 f2 | f1 f2 f3 | f2 f3 f4: 4 images made, 5 reused.
    assert (cache.misses, cache.hits) == (4, 5)
    asyncio.run(policy.abort("s"))
    assert cache.bytes == 0


async def test_a_session_that_ends_leaves_no_images_behind() -> None:
    """A session that ends normally (here: the model answers) drops its model images,
    which are pixels (~6 MiB each at 2048x1024): a long-running daemon does not sit
    on finished sessions' windows until the bound pushes them out."""
    outputs = [
        holo({"action": "click", "x": 10, "y": 10}),
        holo({"action": "answer", "content": "ok"}),
    ]
    policy = ModelPolicy(get_dialect("holotron"), ScriptedEngine(outputs), name="holotron")
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        await stream.start()
        step = (await stream.observe(make_frame("f1", 1280, 720))).actions
        assert policy.image_cache.bytes > 0  # held while the session runs
        ended = (await stream.observe(make_frame("f2", 1280, 720), ok_results(step))).ended
        assert ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
        await stream.finished_ok()
        await wait_until(lambda: policy.image_cache.bytes == 0, "the images dropped")


def test_image_parts_hold_bytes_or_pixels_and_give_either() -> None:
    png = image_bytes(64, 48)
    as_sent = ImagePart(png, "image/png", 64, 48)
    assert as_sent.encoded() is png
    assert as_sent.nbytes == len(png)
    pixels = as_sent.pixels()
    resized = ImagePart.of_pixels(pixels, "image/png")
    assert resized.pixels() is resized.image
    assert resized.nbytes == 64 * 48 * 3
    encoded = resized.encoded()
    assert encoded is resized.encoded()  # encoded once
    with Image.open(io.BytesIO(encoded)) as image:
        assert image.format == "PNG"
        assert np.array_equal(np.asarray(image.convert("RGB")), np.asarray(pixels))
    lossy = ImagePart.of_pixels(pixels, "image/jpeg", quality=50)
    with Image.open(io.BytesIO(lossy.encoded())) as image:
        assert (image.format, image.size) == ("JPEG", (64, 48))
