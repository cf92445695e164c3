"""ControlService against live sessions: list, pause/resume, cancel, server info."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from google.rpc import error_details_pb2

from holodesk.proto.v1 import agent_pb2, control_pb2
from tests.daemon.support import (
    GUARD_S,
    RecordingPolicy,
    holo,
    make_frame,
    rich_status,
    running_daemon,
)

CLICK = holo({"action": "click", "x": 10, "y": 10})


async def test_list_shows_live_sessions() -> None:
    async with running_daemon([RecordingPolicy([CLICK])]) as daemon:
        assert not (await daemon.control.ListSessions(control_pb2.ListSessionsRequest())).sessions
        stream = daemon.stream()
        started = await stream.start(
            "open the mail", client=agent_pb2.ClientInfo(os="linux", hostname="desk-7"), max_steps=9
        )
        (info,) = (await daemon.control.ListSessions(control_pb2.ListSessionsRequest())).sessions
        assert info.session_id == started.session_id
        assert info.task == "open the mail"
        assert info.state == control_pb2.SESSION_STATE_WAITING_FOR_CLIENT
        assert (info.step, info.max_steps) == (0, 9)
        assert info.policy == "recording"
        assert (info.client_hostname, info.client_os) == ("desk-7", "linux")
        assert info.started_at.seconds > 0
        assert info.principal == "anonymous"  # open mode on loopback


async def test_pause_holds_the_next_step_until_resume() -> None:
    policy = RecordingPolicy([CLICK])
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        paused = await daemon.control.PauseSession(
            control_pb2.PauseSessionRequest(session_id=started.session_id)
        )
        assert paused.session.state == control_pb2.SESSION_STATE_PAUSED
        await stream.send(
            agent_pb2.RunSessionRequest(observation=agent_pb2.Observation(frame=make_frame("f")))
        )
        session = daemon.running.registry.get(started.session_id)
        await asyncio.wait_for(session.held.wait(), GUARD_S)  # parked before the step
        assert policy.decisions == 0
        (info,) = (await daemon.control.ListSessions(control_pb2.ListSessionsRequest())).sessions
        assert info.state == control_pb2.SESSION_STATE_PAUSED

        resumed = await daemon.control.ResumeSession(
            control_pb2.ResumeSessionRequest(session_id=started.session_id)
        )
        assert resumed.session.state != control_pb2.SESSION_STATE_PAUSED
        # The frame in hand predates the pause (a person may have used the desktop):
        # an empty batch, not a model step, asks for a fresh one first.
        refresh = await stream.recv()
        assert refresh.actions.step == 0
        assert not refresh.actions.actions
        assert policy.decisions == 0
        await stream.send(
            agent_pb2.RunSessionRequest(observation=agent_pb2.Observation(frame=make_frame("g")))
        )
        response = await stream.recv()
        assert response.actions.step == 1
        assert policy.decisions == 1
        assert policy.contexts[-1].frame.frame_id == "g"
        assert len(policy.contexts[-1].frames) == 1  # the stale frame left the window


async def test_operator_cancel_reaches_the_client_as_ended_cancelled() -> None:
    async with running_daemon([RecordingPolicy([CLICK])]) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        await daemon.control.CancelSession(
            control_pb2.CancelSessionRequest(session_id=started.session_id, reason="lunch")
        )
        ended = await stream.recv()
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_CANCELLED
        assert ended.ended.reason == "lunch"
        await stream.finished_ok()
        await asyncio.wait_for(daemon.running.registry.wait_empty(), GUARD_S)


async def test_operator_cancel_of_a_paused_session() -> None:
    async with running_daemon([RecordingPolicy([CLICK])]) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        sid = started.session_id
        await daemon.control.PauseSession(control_pb2.PauseSessionRequest(session_id=sid))
        await stream.send(
            agent_pb2.RunSessionRequest(observation=agent_pb2.Observation(frame=make_frame("f")))
        )
        await asyncio.wait_for(daemon.running.registry.get(sid).held.wait(), GUARD_S)
        await daemon.control.CancelSession(control_pb2.CancelSessionRequest(session_id=sid))
        ended = await stream.recv()
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_CANCELLED
        assert ended.ended.reason == "cancelled by an operator"


async def test_operator_cancel_while_thinking_aborts_the_policy() -> None:
    policy = RecordingPolicy([], block=True)
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        await stream.send(
            agent_pb2.RunSessionRequest(observation=agent_pb2.Observation(frame=make_frame("f")))
        )
        await asyncio.wait_for(policy.thinking.wait(), GUARD_S)
        (info,) = (await daemon.control.ListSessions(control_pb2.ListSessionsRequest())).sessions
        assert info.state == control_pb2.SESSION_STATE_THINKING
        await daemon.control.CancelSession(
            control_pb2.CancelSessionRequest(session_id=started.session_id)
        )
        ended = await stream.recv()
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_CANCELLED
        assert policy.aborted == [started.session_id]


@pytest.mark.parametrize("verb", ["PauseSession", "ResumeSession", "CancelSession"])
async def test_unknown_session_ids_are_not_found(verb: str) -> None:
    requests = {
        "PauseSession": control_pb2.PauseSessionRequest,
        "ResumeSession": control_pb2.ResumeSessionRequest,
        "CancelSession": control_pb2.CancelSessionRequest,
    }
    async with running_daemon([RecordingPolicy([])]) as daemon:
        method = getattr(daemon.control, verb)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await method(requests[verb](session_id="feedbeef"))
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND
        assert "session feedbeef not found" in (caught.value.details() or "")
        info = error_details_pb2.ResourceInfo()
        assert rich_status(caught.value).details[0].Unpack(info)
        assert (info.resource_type, info.resource_name) == ("session", "feedbeef")

        with pytest.raises(grpc.aio.AioRpcError) as empty:
            await method(requests[verb](session_id=""))
        assert empty.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_server_info() -> None:
    async with running_daemon(
        [RecordingPolicy([])], max_message_bytes=8 << 20, max_frame_bytes=4 << 20
    ) as daemon:
        stream = daemon.stream()
        await stream.start()
        info = await daemon.control.GetServerInfo(control_pb2.GetServerInfoRequest())
    assert info.version
    assert info.default_policy == "recording"
    # Every daemon also serves `computer` (attached desktops, computer.proto).
    assert [(p.name, p.ready) for p in info.policies] == [("recording", True), ("computer", True)]
    assert info.active_sessions == 1
    assert info.max_message_bytes == 8 << 20
    assert info.started_at.seconds > 0
