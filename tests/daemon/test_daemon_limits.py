"""Limits against a real daemon: each breach gets its precise status, and the sessions
of everyone else carry on."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2

from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import (
    GUARD_S,
    RecordingPolicy,
    Stream,
    holo,
    make_frame,
    ok_results,
    rich_status,
    running_daemon,
    scripted_policy,
    wait_until,
    write_tokens,
)

CLICK = holo({"action": "click", "x": 500, "y": 500})
ANSWER = holo({"action": "answer", "content": "done"})


def detail(error: grpc.aio.AioRpcError, kind: type) -> object:
    for item in rich_status(error).details:
        message = kind()
        if item.Unpack(message):
            return message
    raise AssertionError(f"no {kind.__name__} in {error.details()}")


async def assert_still_serving(stream: Stream, frame_id: str) -> None:
    """A session started before the breach still gets its step."""
    reply = await stream.observe(make_frame(frame_id))
    assert reply.WhichOneof("event") in {"actions", "ended"}


async def test_too_many_sessions_is_resource_exhausted_with_retry_info() -> None:
    """Past --max-sessions a new session gets RESOURCE_EXHAUSTED with QuotaFailure and
    RetryInfo; the running ones are served, and a freed slot can be taken again."""
    async with running_daemon([scripted_policy([CLICK, ANSWER])], max_sessions=2) as daemon:
        first, second = daemon.stream(), daemon.stream()
        await first.start()
        await second.start()
        third = daemon.stream()
        await third.start_nowait()
        error = await third.error()
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "maximum of 2 concurrent sessions" in (error.details() or "")
        retry = detail(error, error_details_pb2.RetryInfo)
        assert isinstance(retry, error_details_pb2.RetryInfo)
        assert retry.retry_delay.seconds > 0
        detail(error, error_details_pb2.QuotaFailure)

        await assert_still_serving(first, "a1")
        await first.send(agent_pb2.RunSessionRequest(cancel=agent_pb2.CancelSession()))
        assert (await first.recv()).ended.outcome == agent_pb2.SESSION_OUTCOME_CANCELLED
        await wait_until(lambda: len(daemon.running.registry) == 1, "the slot to free")
        assert (await daemon.stream().start()).session_id


async def test_the_per_principal_limit_spares_other_principals(tmp_path: Path) -> None:
    """--max-sessions-per-principal caps one caller; another caller still gets in."""
    tokens = write_tokens(tmp_path, a="agent", b="agent")
    async with running_daemon(
        [scripted_policy([CLICK])], tokens_file=str(tokens.path), max_sessions_per_principal=1
    ) as daemon:
        mine = Stream(daemon.channel, metadata=tokens.metadata("a"))
        await mine.start()
        again = Stream(daemon.channel, metadata=tokens.metadata("a"))
        await again.start_nowait()
        error = await again.error()
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "token:a" in (error.details() or "")
        detail(error, error_details_pb2.RetryInfo)
        theirs = Stream(daemon.channel, metadata=tokens.metadata("b"))
        assert (await theirs.start()).session_id
        await assert_still_serving(mine, "m1")


async def test_a_frame_above_the_pixel_limit_is_invalid_argument() -> None:
    """--max-frame-pixels: a 64x48 frame against a 3000-pixel limit names the field and
    the numbers; the other session carries on."""
    async with running_daemon([scripted_policy([CLICK])], max_frame_pixels=3000) as daemon:
        other = daemon.stream()
        await other.start()
        bad = daemon.stream()
        await bad.start()
        await bad.observe_nowait(make_frame("big", 64, 48))
        error = await bad.error()
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (error.details() or "").startswith("observation.frame.size")
        assert "3072 pixels, above the limit of 3000" in (error.details() or "")
        reply = await other.observe(make_frame("small", 50, 40))  # 2000 pixels
        assert reply.actions.actions


async def test_the_session_time_limit_ends_it_with_a_clear_reason() -> None:
    """--max-session-s: a session whose client never sends its observation ends
    TIME_LIMIT (its own outcome, not FAILED) with reason "time limit: ..." and leaves
    the registry."""
    async with running_daemon([scripted_policy([CLICK])], max_session_s=0.2) as daemon:
        stream = daemon.stream()
        await stream.start()
        ended = await stream.recv()
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_TIME_LIMIT
        assert ended.ended.reason.startswith("time limit:")
        await asyncio.wait_for(daemon.running.registry.wait_empty(), GUARD_S)


async def test_a_stuck_policy_fails_the_step_cleanly() -> None:
    """--step-timeout-s: a policy that never answers is aborted and the session ends
    FAILED naming the step; other sessions and later sessions are unaffected."""
    policy = RecordingPolicy([CLICK], block=True)
    async with running_daemon([policy], step_timeout_s=0.2) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        ended = await stream.observe(make_frame("f1"))
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_FAILED
        assert "step 1: the policy did not decide within 0.2 s" in ended.ended.reason
        assert policy.aborted == [started.session_id]
        await stream.finished_ok()

        policy.block = False
        fresh = daemon.stream()
        await fresh.start()
        step = await fresh.observe(make_frame("g1"))
        assert step.actions.actions


async def test_a_stuck_policy_in_locate_is_deadline_exceeded() -> None:
    """Locate under --step-timeout-s: DEADLINE_EXCEEDED, not a hung call."""

    class StuckLocate(RecordingPolicy):
        async def locate(self, frame, descriptions):  # type: ignore[no-untyped-def]
            await asyncio.Event().wait()

    async with running_daemon([StuckLocate([])], step_timeout_s=0.2) as daemon:
        request = agent_pb2.LocateRequest(frame=make_frame("l", 64, 48), descriptions=["x"])
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await daemon.agent.Locate(request, timeout=GUARD_S)
        assert error.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert "did not locate within 0.2 s" in (error.value.details() or "")


async def test_a_client_deadline_on_locate_cancels_the_policy_work() -> None:
    """A Locate whose own deadline passes is DEADLINE_EXCEEDED and the policy's call is
    cancelled, not left running."""
    cancelled = asyncio.Event()

    class SlowLocate(RecordingPolicy):
        async def locate(self, frame, descriptions):  # type: ignore[no-untyped-def]
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise

    async with running_daemon([SlowLocate([])]) as daemon:
        request = agent_pb2.LocateRequest(frame=make_frame("l", 64, 48), descriptions=["x"])
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await daemon.agent.Locate(request, timeout=0.3)
        assert error.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        await asyncio.wait_for(cancelled.wait(), GUARD_S)


async def test_a_finished_session_keeps_steps_counted_to_the_step_limit() -> None:
    """--max-steps still ends a session STEP_LIMIT (the existing limit, unchanged)."""
    async with running_daemon([scripted_policy([CLICK, CLICK, CLICK])], max_steps=1) as daemon:
        stream = daemon.stream()
        await stream.start()
        first = (await stream.observe(make_frame("f1"))).actions
        ended = await stream.observe(make_frame("f2"), ok_results(first))
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_STEP_LIMIT
