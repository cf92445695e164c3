"""Model images are made once per frame, and the cache stays within its bytes."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable

import numpy as np
from PIL import Image, ImageDraw

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.base import ImagePart
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Size
from holodesk.daemon.policies.image_cache import ModelImageCache
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.steps import StepContext
from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import (
    holo,
    image_bytes,
    make_frame,
    ok_results,
    running_daemon,
    wait_until,
)


def _frame(frame_id: str, shade: int = 0) -> EncodedFrame:
    """A 1280x720 screen; frames of different `shade` show different content."""
    return EncodedFrame(frame_id, Size(1280, 720), ImageEncoding.PNG, _screen(1280, 720, shade))


def _screen(width: int, height: int, shade: int) -> bytes:
    image = Image.new("RGB", (width, height), (240, 240, 240 - shade))
    ImageDraw.Draw(image).rectangle((10, 10, 200, 100), fill=(20, 90, 200))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _part(size: int) -> ImagePart:
    return ImagePart(b"x" * size, "image/png", 1, 1)


def test_hits_misses_eviction_and_sessions_sharing_a_content_key() -> None:
    made: list[str] = []

    def maker(key: str) -> Callable[[], ImagePart]:
        def make() -> ImagePart:
            made.append(key)
            return _part(400)

        return make

    cache = ModelImageCache(max_bytes=1000)
    cache.get("s1", "a", maker("a"))
    cache.get("s1", "a", maker("a"))
    cache.get("s2", "a", maker("a"))  # the same content in another session: shared
    assert made == ["a"]
    assert (cache.hits, cache.misses, cache.bytes) == (2, 1, 400)
    cache.get("s1", "b", maker("b"))
    cache.get("s1", "c", maker("c"))  # 1200 bytes > 1000: the least recently used goes
    assert (len(cache), cache.bytes) == (2, 800)
    cache.get("s2", "a", maker("a"))
    assert made == ["a", "b", "c", "a"]
    cache.get("s1", "a", maker("a"))  # s1 shows "a" again: s1 and s2 hold it
    cache.retain("s1", ["a"])  # s1's window moved on from "c": it goes
    assert (len(cache), cache.bytes) == (1, 400)
    cache.drop_session("s1")  # "a" is s2's too: it stays
    assert (len(cache), cache.bytes) == (1, 400)
    cache.drop_session("s2")
    assert (len(cache), cache.bytes) == (0, 0)
    # An image larger than the whole cache is made, returned, never kept.
    huge = ModelImageCache(max_bytes=100)
    assert huge.get("s", "c", maker("c")).data == b"x" * 400
    assert huge.bytes == 0


def test_a_session_makes_each_screen_image_once() -> None:
    outputs = [holo({"action": "click", "x": 10, "y": 10})] * 4
    policy = ModelPolicy(get_dialect("holotron"), ScriptedEngine(outputs), name="scripted")
    frames = [_frame(f"f{i}", shade=i) for i in range(1, 5)]

    async def run() -> None:
        await policy.start()
        for step in range(1, 5):
            window = tuple(frames[max(0, step - 3) : step])  # holotron keeps 3 images
            await policy.decide(StepContext("s", "task", step, window))

    asyncio.run(run())
    cache = policy.image_cache
    # Windows f1 | f1 f2 | f1 f2 f3 | f2 f3 f4: 4 images made, 5 reused.
    assert (cache.misses, cache.hits) == (4, 5)
    # f1 left the window, and its image went with it: a session holds its window only.
    assert len(cache) == 3
    asyncio.run(policy.abort("s"))
    assert cache.bytes == 0


def test_an_unchanged_screen_is_the_image_already_made() -> None:
    """Each delta gets a new frame id; an unchanged screen (same bytes) must not cost
    a new model image: 20 steps on one screen make one image, in one session or two."""
    outputs = [holo({"action": "wait", "duration": 0.1})] * 20
    policy = ModelPolicy(get_dialect("holotron"), ScriptedEngine(outputs), name="scripted")
    screen = _screen(1920, 1080, 0)
    frames = [EncodedFrame(f"f{i}", Size(1920, 1080), ImageEncoding.PNG, screen) for i in range(20)]

    async def run() -> None:
        await policy.start()
        for step in range(1, 11):
            for session in ("s1", "s2"):
                window = tuple(frames[max(0, step - 3) : step])
                await policy.decide(StepContext(session, "task", step, window))

    asyncio.run(run())
    assert policy.image_cache.misses == 1
    assert len(policy.image_cache) == 1


async def test_a_session_that_ends_leaves_no_images_behind() -> None:
    """A session that ends normally (here: the model answers) drops its model images,
    which may be pixels (~6 MiB each at 1080p): a long-running daemon does not sit
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
        assert len(policy.image_cache) > 0  # held while the session runs
        ended = (await stream.observe(make_frame("f2", 1280, 720), ok_results(step))).ended
        assert ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
        await stream.finished_ok()
        await wait_until(lambda: len(policy.image_cache) == 0, "the images dropped")


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
