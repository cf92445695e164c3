"""Graceful shutdown with many sessions in every state, in process and as a real
holodeskd receiving SIGTERM."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import grpc
import pytest

from holodesk.daemon.frames import EncodedFrame
from holodesk.daemon.policies.base import Decision, Location
from holodesk.daemon.steps import StepContext
from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import (
    GUARD_S,
    RecordingPolicy,
    Stream,
    holo,
    make_frame,
    running_daemon,
    spawn_holodeskd,
    wait_serving,
    wait_until,
)

CLICK = holo({"action": "click", "x": 500, "y": 500})
FRAME = make_frame("f1", 64, 48)


class ReleasedPolicy(RecordingPolicy):
    """Thinks until `release` is set: a step that finishes during the drain."""

    def __init__(self, name: str) -> None:
        super().__init__([CLICK] * 4)
        self.name = name
        self.release = asyncio.Event()
        self.waiting = 0

    async def decide(self, context: StepContext) -> Decision:
        self.waiting += 1
        await self.release.wait()
        return await super().decide(context)


class ReleasedLocator(ReleasedPolicy):
    """Locates when `release` is set: an answer still being made when the drain starts."""

    async def locate(
        self, frame: EncodedFrame, descriptions: tuple[str, ...]
    ) -> tuple[Location, ...]:
        self.waiting += 1
        await self.release.wait()
        return tuple(Location(d, found=False, absent=True) for d in descriptions)


async def _code(stream: Stream) -> grpc.StatusCode:
    return (await stream.error()).code()


async def test_stop_with_many_sessions_in_every_state_ends_within_the_grace() -> None:
    """60 sessions waiting for their client, 30 detached, 30 mid-step with a policy that
    never answers, grace 0.5 s: stop() returns, the waiting ones get UNAVAILABLE, the
    stuck steps are cut at the grace with their policy work aborted, the detached ones
    are dropped, and every session passes the registry's listeners (the recording hook)
    exactly once."""
    stuck = RecordingPolicy([CLICK], block=True)
    async with running_daemon([stuck], grace_s=0.5) as daemon:
        registry = daemon.running.registry
        left: list[str] = []
        registry.listeners.append(lambda s: left.append(s.session_id))

        async def opened() -> Stream:
            stream = daemon.stream()
            await stream.start()
            return stream

        waiting = [await opened() for _ in range(60)]
        detached = [await opened() for _ in range(30)]
        for stream in detached:
            stream.call.cancel()
        thinking = [await opened() for _ in range(30)]
        for stream in thinking:
            await stream.observe_nowait(FRAME)
        await wait_until(lambda: len(stuck.contexts) == 30, "30 stuck steps")
        await wait_until(
            lambda: sum(not s.attached for s in registry.list()) == 30, "30 detached sessions"
        )
        assert len(registry) == 120

        await asyncio.wait_for(daemon.running.stop(), GUARD_S)

        codes = await asyncio.gather(*(_code(s) for s in waiting + thinking))
        assert set(codes) <= {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED}
        assert set(codes[:60]) == {grpc.StatusCode.UNAVAILABLE}
        assert len(registry) == 0
        assert len(left) == len(set(left)) == 120
        stuck_ids = {c.session_id for c in stuck.contexts}
        await wait_until(lambda: stuck_ids <= set(stuck.aborted), "the stuck steps' aborts")


async def test_steps_being_decided_finish_and_send_their_actions_during_the_drain() -> None:
    """20 sessions mid-step when the drain starts: their steps finish inside the grace,
    each client receives its actions and then UNAVAILABLE (the daemon is going away), and
    stop() returns as soon as they are done, long before the 30 s grace."""
    finishing = ReleasedPolicy("finishing")
    async with running_daemon([finishing], grace_s=30.0) as daemon:
        streams = [daemon.stream() for _ in range(20)]
        for stream in streams:
            await stream.start()
            await stream.observe_nowait(FRAME)
        await wait_until(lambda: finishing.waiting == 20, "20 steps being decided")

        async def outcome(stream: Stream) -> tuple[str | None, grpc.StatusCode]:
            reply = await stream.recv()
            return reply.WhichOneof("event"), await _code(stream)

        readers = [asyncio.create_task(outcome(s)) for s in streams]
        stopping = asyncio.create_task(daemon.running.stop())
        await asyncio.wait_for(daemon.running.registry.shutting_down.wait(), GUARD_S)
        finishing.release.set()
        results = await asyncio.wait_for(asyncio.gather(*readers), GUARD_S)
        assert set(results) == {("actions", grpc.StatusCode.UNAVAILABLE)}
        await asyncio.wait_for(stopping, GUARD_S)
        assert len(daemon.running.registry) == 0


async def test_sigterm_mid_session_with_a_detached_session_exits_zero(tmp_path: Path) -> None:
    """A real holodeskd with one session waiting for its client and one detached: SIGTERM
    gives the live client UNAVAILABLE, drops the detached one, and exits 0; afterwards the
    detached session's token has nowhere to go."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([CLICK, CLICK]))
    process, address = await spawn_holodeskd("--policy", "scripted", "--script", str(script))
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            await wait_serving(channel)

            live = Stream(channel)
            await live.start()
            await live.observe(make_frame("f1", 64, 48))
            gone = Stream(channel)
            await gone.start()
            gone.call.cancel()  # detached: the daemon keeps it for a resume
            assert process.stderr is not None
            seen = ""
            while "detached after step" not in seen:
                seen = (await asyncio.wait_for(process.stderr.readline(), GUARD_S)).decode()

            process.send_signal(signal.SIGTERM)
            error = await live.error()
            assert error.code() == grpc.StatusCode.UNAVAILABLE
            assert "shutting down" in (error.details() or "")
        code = await asyncio.wait_for(process.wait(), GUARD_S)
        stderr = (await process.stderr.read()).decode()
        assert code == 0, stderr
        assert "dropped 1 detached session(s)" in stderr
        assert "holodeskd stopped" in stderr
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_no_new_session_starts_while_draining() -> None:
    """Once the drain begins a new RunSession or Locate is refused by the daemon itself
    (UNAVAILABLE, "shutting down") while a running step is still finishing: the port
    stays open until then, because a gRPC core already stopping answers CANCELLED or
    INTERNAL instead (21 of 60 runs did before the drain waited for the sessions)."""
    finishing = ReleasedPolicy("finishing")
    async with running_daemon([finishing], grace_s=5.0) as daemon:
        busy = daemon.stream()
        await busy.start()
        await busy.observe_nowait(FRAME)
        await wait_until(lambda: finishing.waiting == 1, "the step to start")
        stopping = asyncio.create_task(daemon.running.stop())
        await asyncio.wait_for(daemon.running.registry.shutting_down.wait(), GUARD_S)
        late = daemon.stream()
        try:  # refused at the transport (GOAWAY, closed port) or by the daemon itself
            await late.start_nowait()
            refusal = await late.error()
        except grpc.aio.AioRpcError as exc:
            refusal = exc
        assert refusal.code() == grpc.StatusCode.UNAVAILABLE, refusal.details()
        assert "shutting down" in (refusal.details() or "")
        locate = agent_pb2.LocateRequest(frame=FRAME, descriptions=["the button"])
        with pytest.raises(grpc.aio.AioRpcError) as refused_locate:
            await daemon.agent.Locate(locate, timeout=GUARD_S)
        assert refused_locate.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "shutting down" in (refused_locate.value.details() or "")
        finishing.release.set()
        assert (await busy.recv()).WhichOneof("event") == "actions"
        await asyncio.wait_for(stopping, GUARD_S)


async def test_a_locate_being_answered_when_the_drain_starts_is_answered() -> None:
    """The drain waits for Locate answers as for steps, the port open meanwhile, so a
    Locate arriving then is refused by the daemon itself (UNAVAILABLE, "shutting down")
    rather than by a stopping gRPC core (CANCELLED or INTERNAL: a batch would take those
    for an answer about its image)."""
    locator = ReleasedLocator("locator")
    request = agent_pb2.LocateRequest(frame=FRAME, descriptions=["the button"])
    async with running_daemon([locator], grace_s=30.0) as daemon:
        answering = asyncio.ensure_future(daemon.agent.Locate(request, timeout=GUARD_S))
        await wait_until(lambda: locator.waiting == 1, "the Locate to be answered")
        stopping = asyncio.create_task(daemon.running.stop())
        await asyncio.wait_for(daemon.running.registry.shutting_down.wait(), GUARD_S)
        with pytest.raises(grpc.aio.AioRpcError) as late:
            await daemon.agent.Locate(request, timeout=GUARD_S)
        assert late.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "shutting down" in (late.value.details() or "")
        assert not stopping.done(), "the stop did not wait for the Locate being answered"
        locator.release.set()
        answer = await asyncio.wait_for(answering, GUARD_S)
        assert [location.description for location in answer.locations] == ["the button"]
        await asyncio.wait_for(stopping, GUARD_S)
