"""Model images are made once per frame, and the cache stays within its bytes."""

from __future__ import annotations

import asyncio

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.base import ImagePart
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Size
from holodesk.daemon.policies.base import StepContext
from holodesk.daemon.policies.image_cache import ModelImageCache
from holodesk.daemon.policies.model import ModelPolicy
from tests.daemon.support import holo, image_bytes


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
