"""One frame budget for all sessions: past it RESOURCE_EXHAUSTED with RetryInfo,
never unbounded growth; the session that met it stays resumable."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2

from holodesk.client.reconnect import is_resumable, retry_after
from holodesk.daemon.errors import RETRY_WHEN_FULL_S, ResourceExhausted
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Size
from holodesk.daemon.session.frame_memory import FrameMemory, unique_bytes
from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import (
    holo,
    ok_results,
    running_daemon,
    scripted_policy,
    wait_until,
)
from tests.daemon.test_daemon_deltas import delta, full_frame, noise
from tests.daemon.test_daemon_limits import detail

WAIT = holo({"action": "wait", "duration": 0.1})
KIB = 1024


def test_growth_past_the_budget_is_refused_and_changes_nothing() -> None:
    memory = FrameMemory(1000)
    memory.change(600)
    with pytest.raises(ResourceExhausted, match="401 more bytes"):
        memory.change(401)
    assert memory.held == 600
    memory.change(-200)  # giving back always works
    memory.change(600)
    assert memory.held == 1000
    with pytest.raises(ResourceExhausted, match="new session") as refused:
        memory.check_room()
    assert refused.value.retry_after_s


def test_frames_sharing_bytes_count_once() -> None:
    data = b"x" * 100
    frames = [EncodedFrame(f"f{i}", Size(1, 1), ImageEncoding.PNG, data) for i in range(3)]
    other = EncodedFrame("g", Size(1, 1), ImageEncoding.PNG, b"y" * 50)
    assert unique_bytes([*frames, other]) == 150


async def test_past_the_budget_new_sessions_and_frames_wait_and_sessions_resume() -> None:
    """One session holds a noise frame (~9 KiB); an unchanged screen costs nothing
    more; with the budget then spent, a second session is refused, and a frame that
    does not fit is refused too, with RetryInfo, leaving its session resumable. Once
    there is room again the session resumes and goes on."""
    screen = noise(64, 48, seed=1)
    policy = scripted_policy([WAIT] * 10)
    async with running_daemon(
        [policy], max_frame_bytes=256 * KIB, max_frame_memory_bytes=256 * KIB
    ) as daemon:
        memory = daemon.running.registry.frame_memory
        first = daemon.stream()
        started = await first.start()
        step = (await first.observe(full_frame("f1", screen))).actions
        held = memory.held
        assert held > 0
        step = (await first.observe(delta("f2", "f1"), ok_results(step))).actions
        assert memory.held == held  # the unchanged screen shares its base's bytes

        memory.max_bytes = held  # spent: no room for anything more
        second = daemon.stream()
        await second.start_nowait()
        refused = await second.error()
        assert refused.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "frame memory" in (refused.details() or "")
        detail(refused, error_details_pb2.QuotaFailure)
        assert retry_after(refused) == RETRY_WHEN_FULL_S

        await first.observe_nowait(full_frame("f3", noise(64, 48, seed=2)), ok_results(step))
        error = await first.error()
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        detail(error, error_details_pb2.QuotaFailure)
        # The holodesk client waits what RetryInfo says, then resumes.
        assert is_resumable(error)
        assert retry_after(error) == RETRY_WHEN_FULL_S
        session = daemon.running.registry.get(started.session_id)
        await wait_until(lambda: not session.attached, "the session to detach")
        assert memory.held == held  # the refused frame was never held

        memory.max_bytes = 256 * KIB
        again = daemon.stream()
        resumed = await again.start("", resume_token=started.resume_token)
        assert resumed.session_id == started.session_id
        reply = await again.observe(full_frame("f4", noise(64, 48, seed=3)))
        assert reply.actions.actions
        await again.send(agent_pb2.RunSessionRequest(cancel=agent_pb2.CancelSession()))
        assert (await again.recv()).ended.outcome == agent_pb2.SESSION_OUTCOME_CANCELLED
        await wait_until(lambda: memory.held == 0, "the ended session to give its frames back")


async def test_grpcs_own_size_limit_is_not_a_reason_to_resume() -> None:
    """RESOURCE_EXHAUSTED without RetryInfo (a message over --max-message-mb) would
    fail the same way again: the client does not retry it."""
    async with running_daemon(
        [scripted_policy([WAIT])], max_message_bytes=64 * KIB, max_frame_bytes=64 * KIB
    ) as daemon:
        stream = daemon.stream()
        await stream.start()
        await stream.observe_nowait(full_frame("huge", noise(200, 200, seed=4)))  # ~117 KiB
        error = await stream.error()
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert retry_after(error) is None
        assert not is_resumable(error)
