"""Hostile frames against a real daemon process: tiny bodies that decode or rebuild
large are refused before they cost memory, and a healthy session beside them goes on.

The daemon runs in its own process (tests/bench/daemon_proc.py: the real server with
an instant policy that asks for frames within 1920x1080, the box a 1080p client gets),
so its RSS is its own, read from /proc while the attack runs. The attackers are eight
sessions, each sending a 7680x5200 frame of one colour (a few KiB of PNG, 120 MB of
pixels) and deltas on it whose patches repaint it four times over: before frames had
to fit the FrameSpec the daemon gave, each delta decoded and painted ~500 MB and the
daemon's RSS went up by gigabytes.
"""

from __future__ import annotations

import asyncio
import io
import statistics
import time
from collections.abc import Iterator

import grpc
import numpy as np
import pytest
from PIL import Image

from holodesk.proto.v1 import agent_pb2, frame_pb2, geometry_pb2
from tests.bench.daemon_proc import ServerProcess, server_process
from tests.daemon.support import Stream, ok_results

pytestmark = [pytest.mark.abuse, pytest.mark.timeout(120)]

HOSTILE_SIZE = (7680, 5200)  # 40 Mpx: inside --max-frame-pixels, far outside the box
HEALTHY_SIZE = (1920, 1080)
ATTACKERS = 8
# What the attack may add to the daemon's RSS: the healthy session's screens and
# the refused messages' bytes, never the attackers' pixels (120 MB a frame).
RSS_GROWTH_LIMIT = 200 * 1024 * 1024
# Refusals take milliseconds; before the fix the attack was still being served here.
ATTACK_LIMIT_S = 30.0


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def solid(size: tuple[int, int], colour: tuple[int, int, int]) -> bytes:
    return png(Image.new("RGB", size, colour))


def frame(frame_id: str, size: tuple[int, int], data: bytes) -> frame_pb2.Frame:
    width, height = size
    return frame_pb2.Frame(
        frame_id=frame_id,
        size=geometry_pb2.Size(width=width, height=height),
        encoding=frame_pb2.IMAGE_ENCODING_PNG,
        data=data,
        source=geometry_pb2.Rect(x=0, y=0, width=width, height=height),
        scale_factor=1.0,
    )


def repaint(frame_id: str, base_id: str, size: tuple[int, int], step: int) -> frame_pb2.Frame:
    """A delta whose four patches each repaint the whole frame (the most area allowed)."""
    width, height = size
    patch = frame_pb2.FramePatch(
        rect=geometry_pb2.Rect(x=0, y=0, width=width, height=height),
        encoding=frame_pb2.IMAGE_ENCODING_PNG,
        data=solid(size, (step % 256, 40, 90)),
    )
    return frame_pb2.Frame(
        frame_id=frame_id,
        size=geometry_pb2.Size(width=width, height=height),
        base_frame_id=base_id,
        source=geometry_pb2.Rect(x=0, y=0, width=width, height=height),
        scale_factor=1.0,
        patches=[patch] * 4,
    )


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.fixture
def daemon() -> Iterator[ServerProcess]:
    with server_process("holodesk", policy="instant", max_sessions=64) as server:
        yield server


class Healthy:
    """A 1080p session typing into a window: a full frame, then small deltas."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stream = Stream(channel)
        rng = np.random.default_rng(0)
        screen = rng.integers(0, 256, (HEALTHY_SIZE[1], HEALTHY_SIZE[0], 3), dtype=np.uint8)
        self.first = png(Image.fromarray(screen))
        self.latencies: list[float] = []
        self.step = 0
        self._last = ""
        self._actions: agent_pb2.Actions | None = None

    async def start(self) -> None:
        await self.stream.start("keep typing")
        await self._observe(frame("h0", HEALTHY_SIZE, self.first))

    async def type_one(self) -> None:
        self.step += 1
        patch = frame_pb2.FramePatch(
            rect=geometry_pb2.Rect(x=8 * (self.step % 200), y=500, width=8, height=16),
            encoding=frame_pb2.IMAGE_ENCODING_PNG,
            data=solid((8, 16), (self.step % 256, 0, 0)),
        )
        delta = frame_pb2.Frame(
            frame_id=f"h{self.step}",
            size=geometry_pb2.Size(width=HEALTHY_SIZE[0], height=HEALTHY_SIZE[1]),
            base_frame_id=self._last,
            source=geometry_pb2.Rect(x=0, y=0, width=HEALTHY_SIZE[0], height=HEALTHY_SIZE[1]),
            scale_factor=1.0,
            patches=[patch],
        )
        await self._observe(delta)

    async def _observe(self, sent: frame_pb2.Frame) -> None:
        results = ok_results(self._actions) if self._actions is not None else ()
        began = time.perf_counter()
        response = await self.stream.observe(sent, results)
        self.latencies.append(time.perf_counter() - began)
        assert response.WhichOneof("event") == "actions", response
        self._actions = response.actions
        self._last = sent.frame_id


async def attack(channel: grpc.aio.Channel, index: int) -> grpc.StatusCode:
    """One attacker: the huge frame, then repainting deltas until the daemon says no."""
    stream = Stream(channel)
    await stream.start("flood")
    try:
        response = await stream.observe(frame("a0", HOSTILE_SIZE, solid(HOSTILE_SIZE, (1, 2, 3))))
        actions = response.actions
        for step in range(1, 4):
            response = await stream.observe(
                repaint(f"a{step}", f"a{step - 1}", HOSTILE_SIZE, step + index),
                ok_results(actions),
            )
            actions = response.actions
    except grpc.aio.AioRpcError as error:
        return error.code()
    return grpc.StatusCode.OK


async def test_huge_frames_are_refused_before_they_cost_memory_and_a_healthy_session_goes_on(
    daemon: ServerProcess,
) -> None:
    async with grpc.aio.insecure_channel(daemon.address) as channel:
        healthy = Healthy(channel)
        await healthy.start()
        for _ in range(5):
            await healthy.type_one()
        calm = list(healthy.latencies[1:])
        before = rss(daemon.pid)
        peak = before
        attackers = [asyncio.create_task(attack(channel, i)) for i in range(ATTACKERS)]
        during: list[float] = []
        deadline = time.monotonic() + ATTACK_LIMIT_S
        while not all(task.done() for task in attackers) and time.monotonic() < deadline:
            start = len(healthy.latencies)
            await healthy.type_one()
            during.extend(healthy.latencies[start:])
            peak = max(peak, rss(daemon.pid))
        for task in attackers:
            task.cancel()
        codes = [
            task.result() if task.done() and not task.cancelled() else "still served"
            for task in attackers
        ]
        for _ in range(3):
            await healthy.type_one()
            peak = max(peak, rss(daemon.pid))
    growth = peak - before
    print(
        f"daemon RSS {before / 2**20:.0f} MiB -> peak {peak / 2**20:.0f} MiB under "
        f"{ATTACKERS} attackers; healthy step p50 {statistics.median(calm) * 1000:.1f} ms "
        f"calm, {statistics.median(during or calm) * 1000:.1f} ms during the attack"
    )
    assert codes == [grpc.StatusCode.INVALID_ARGUMENT] * ATTACKERS
    assert growth < RSS_GROWTH_LIMIT, f"RSS grew by {growth / 2**20:.0f} MiB"
    assert daemon.process.poll() is None
