"""1000 concurrent sessions on one daemon, one channel, against an instant policy:
no error, and memory that comes back down."""

from __future__ import annotations

import asyncio
import gc
import resource
from pathlib import Path

from holodesk.daemon.actions import Click, Done
from holodesk.daemon.frames import EncodedFrame, FrameSpec, ImageEncoding
from holodesk.daemon.geometry import Point, Size
from holodesk.daemon.policies.base import Decision, Location
from holodesk.daemon.steps import StepContext
from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import GUARD_S, Stream, make_frame, ok_results, running_daemon

SESSIONS = 1000
MIB = 1024 * 1024


class InstantPolicy:
    """The Policy protocol with no model at all: click, then done. Only the daemon's
    own costs remain."""

    name = "instant"
    description = "clicks once, then answers"
    ready = True
    history_frames = 2

    def frame_spec(
        self, accepted: tuple[ImageEncoding, ...], screen: Size | None = None
    ) -> FrameSpec:
        return FrameSpec(max_width=64, max_height=48)

    async def start(self) -> None:
        return None

    async def decide(self, context: StepContext) -> Decision:
        if context.step == 1:
            return Decision((Click(Point(10, 10)),))
        return Decision((Done("ok"),))

    async def locate(
        self, frame: EncodedFrame, descriptions: tuple[str, ...]
    ) -> tuple[Location, ...]:
        return ()

    async def abort(self, session_id: str) -> None:
        return None

    async def close(self) -> None:
        return None


def rss_bytes() -> int:
    """Resident set size now, from /proc (Linux), else the peak from getrusage."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


async def test_1000_concurrent_sessions_on_one_channel_with_bounded_memory() -> None:
    """All 1000 sessions are live at once (each waits at a barrier after its start), then
    each runs two steps to SUCCEEDED. No stream fails, the registry empties, and a second
    round of 1000 grows RSS by far less than the first: nothing per session is kept."""
    first_frame, second_frame = make_frame("a", 64, 48), make_frame("b", 64, 48)

    async with running_daemon([InstantPolicy()], max_sessions=SESSIONS) as daemon:
        registry = daemon.running.registry

        async def one(all_started: asyncio.Event, started: list[int]) -> None:
            stream = Stream(daemon.channel)
            await stream.start()
            started[0] += 1
            if started[0] == SESSIONS:
                all_started.set()
            await asyncio.wait_for(all_started.wait(), GUARD_S * 2)
            step = await stream.observe(first_frame)
            ended = await stream.observe(second_frame, ok_results(step.actions))
            assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
            await stream.finished_ok()

        async def round_of(count: int) -> int:
            all_started, started, peak = asyncio.Event(), [0], 0

            async def watch() -> None:
                nonlocal peak
                await all_started.wait()
                peak = len(registry)

            watcher = asyncio.create_task(watch())
            if count < SESSIONS:
                all_started.set()
            await asyncio.gather(*(one(all_started, started) for _ in range(count)))
            await watcher
            await asyncio.wait_for(registry.wait_empty(), GUARD_S)
            gc.collect()
            return peak

        await round_of(50)  # warm up: imports, caches, the channel's buffers
        before = rss_bytes()
        peak = await round_of(SESSIONS)
        after_first = rss_bytes()
        await round_of(SESSIONS)
        after_second = rss_bytes()

    assert peak == SESSIONS  # they really were all live at once
    first_growth, second_growth = after_first - before, after_second - after_first
    print(
        f"\nRSS: {before / MIB:.0f} MiB before, +{first_growth / MIB:.1f} MiB after "
        f"{SESSIONS} sessions, +{second_growth / MIB:.1f} MiB after {SESSIONS} more"
    )
    assert first_growth < 400 * MIB
    assert second_growth < 64 * MIB
