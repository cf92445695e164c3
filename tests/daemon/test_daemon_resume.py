"""Resume after a dropped stream, with real faults: a TCP proxy resets the connection
between a raw-stub client and a real daemon mid-step, and the client comes back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from holodesk.daemon.actions import ActionStatus
from holodesk.proto.v1 import action_pb2, agent_pb2, control_pb2, frame_pb2
from tests.daemon.support import (
    GUARD_S,
    Daemon,
    RecordingPolicy,
    Stream,
    holo,
    make_frame,
    ok_results,
    proxied,
    running_daemon,
    the_session,
    wait_until,
    write_tokens,
)

BATCH = json.dumps(
    {
        "thought": "fill the form",
        "actions": [
            {"action": "click", "x": 100, "y": 100},
            {"action": "write", "content": "hello"},
            {"action": "hotkey", "keys": "enter"},
        ],
    }
)
CLICK = holo({"action": "click", "x": 500, "y": 500})
ANSWER = holo({"action": "answer", "content": "done"})


def result(action_id: str, status: action_pb2.ActionStatus.ValueType) -> action_pb2.ActionResult:
    return action_pb2.ActionResult(action_id=action_id, status=status)


OK = action_pb2.ACTION_STATUS_OK
NOT_DELIVERED = action_pb2.ACTION_STATUS_NOT_DELIVERED


async def test_drop_mid_step_then_resume_reports_pending_ids_and_decides_a_new_step() -> None:
    """A connection reset after a batch arrived detaches (not destroys) the session; the
    resume gets the same session, a rotated token, the last step and exactly the batch's
    ids; the results (OK for what ran, NOT_DELIVERED for the rest) reach the policy with
    the fresh frame, and the daemon decides a NEW step: no action id is ever sent twice."""
    policy = RecordingPolicy([BATCH, CLICK, ANSWER])
    async with running_daemon([policy]) as daemon, proxied(daemon) as (proxy, channel):
        stream = Stream(channel)
        started = await stream.start("fill the form")
        batch = (await stream.observe(make_frame("f1"))).actions
        sent_ids = [a.action_id for a in batch.actions]
        assert len(sent_ids) == 3

        # The client ran the first action, then the network failed mid-step.
        assert await proxy.reset_all() >= 1
        error = await stream.error()
        assert error.code() == grpc.StatusCode.UNAVAILABLE
        await wait_until(lambda: not the_session(daemon).attached, "the session to detach")
        assert len(daemon.running.registry) == 1  # detached, not destroyed

        listed = await daemon.control.ListSessions(control_pb2.ListSessionsRequest())
        assert listed.sessions[0].state == control_pb2.SESSION_STATE_DETACHED

        # A fresh connection, as the client opens on reconnect: the proxied one may
        # still be failing over from the reset.
        again = daemon.stream()
        resumed = await again.start("", resume_token=started.resume_token)
        assert resumed.resumed
        assert resumed.session_id == started.session_id
        assert resumed.resume_token
        assert resumed.resume_token != started.resume_token
        assert resumed.step == 1
        assert list(resumed.pending_action_ids) == sent_ids
        assert resumed.frame_spec == started.frame_spec

        results = [result(sent_ids[0], OK)] + [result(i, NOT_DELIVERED) for i in sent_ids[1:]]
        step2 = (await again.observe(make_frame("f2"), results)).actions
        assert step2.step == 2
        assert not {a.action_id for a in step2.actions} & set(sent_ids)  # never re-sent

        # The policy decided step 2 from the fresh frame, knowing what did not run.
        assert policy.decisions == 2
        context = policy.contexts[-1]
        assert context.step == 2
        assert context.frame.frame_id == "f2"
        statuses = [r.status for r in context.history[0].results]
        assert statuses == [ActionStatus.OK, ActionStatus.NOT_DELIVERED, ActionStatus.NOT_DELIVERED]
        assert the_session(daemon).executed[sent_ids[1]].status is ActionStatus.NOT_DELIVERED

        ended = await again.observe(make_frame("f3"), ok_results(step2))
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
        assert ended.ended.steps == 3
        await again.finished_ok()
    assert policy.decisions == 3  # one decision per step: nothing was decided twice


async def test_drop_while_thinking_aborts_the_policy_and_resume_decides_from_a_fresh_frame() -> (
    None
):
    """A reset while the policy thinks aborts the in-flight work; the undecided frame is
    forgotten, nothing is pending, and after the resume the step is decided from the
    fresh frame alone."""
    policy = RecordingPolicy([CLICK], block=True)
    async with running_daemon([policy]) as daemon, proxied(daemon) as (proxy, channel):
        stream = Stream(channel)
        started = await stream.start()
        await stream.observe_nowait(make_frame("stale"))
        await asyncio.wait_for(policy.thinking.wait(), GUARD_S)

        await proxy.reset_all()
        await asyncio.wait_for(policy.abort_seen.wait(), GUARD_S)
        assert policy.aborted == [started.session_id]
        await wait_until(lambda: not the_session(daemon).attached, "the session to detach")

        policy.block = False
        # A fresh connection, as the client opens on reconnect: the proxied one may
        # still be failing over from the reset.
        again = daemon.stream()
        resumed = await again.start("", resume_token=started.resume_token)
        assert (resumed.resumed, resumed.step, list(resumed.pending_action_ids)) == (True, 0, [])
        step1 = (await again.observe(make_frame("fresh"))).actions
        assert step1.step == 1
        assert step1.actions[0].frame_id == "fresh"
        assert [f.frame_id for f in policy.contexts[-1].frames] == ["fresh"]


async def test_resume_on_a_session_still_attached_is_failed_precondition() -> None:
    """A half-open connection (the proxy silently swallows everything) keeps the session
    attached: a resume is refused with FAILED_PRECONDITION until the old stream is seen
    to drop; then the same token works."""
    policy = RecordingPolicy([CLICK, CLICK])
    async with running_daemon([policy]) as daemon, proxied(daemon) as (proxy, channel):
        stream = Stream(channel)
        started = await stream.start()
        await stream.observe(make_frame("f1"))
        proxy.blackhole = True

        direct = daemon.stream()
        await direct.start_nowait("", resume_token=started.resume_token)
        error = await direct.error()
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "attached to another stream" in (error.details() or "")

        await proxy.reset_all()
        await wait_until(lambda: not the_session(daemon).attached, "the session to detach")
        again = daemon.stream()
        resumed = await again.start("", resume_token=started.resume_token)
        assert resumed.session_id == started.session_id


async def test_tokens_work_once_and_unknown_tokens_are_not_found() -> None:
    """The token used to resume is dead at once (rotation); a made-up one is NOT_FOUND."""
    async with running_daemon([RecordingPolicy([CLICK])]) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        stream.call.cancel()
        await wait_until(lambda: not the_session(daemon).attached, "the session to detach")
        resumed = await daemon.stream().start("", resume_token=started.resume_token)
        assert resumed.resumed

        for token in (started.resume_token, "made-up-token-0123456789"):
            late = daemon.stream()
            await late.start_nowait("", resume_token=token)
            error = await late.error()
            assert error.code() == grpc.StatusCode.NOT_FOUND
            assert "resume token" in (error.details() or "")


async def test_a_detached_session_expires_after_the_window() -> None:
    """Past --resume-window-s a detached session is removed and its token is NOT_FOUND."""
    policy = RecordingPolicy([CLICK])
    async with running_daemon([policy], resume_window_s=0.05) as daemon:
        removed: list[str] = []
        daemon.running.registry.listeners.append(lambda s: removed.append(s.session_id))
        stream = daemon.stream()
        started = await stream.start()
        stream.call.cancel()
        await asyncio.wait_for(daemon.running.registry.wait_empty(), GUARD_S)
        assert removed == [started.session_id]

        late = daemon.stream()
        await late.start_nowait("", resume_token=started.resume_token)
        assert (await late.error()).code() == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize(
    ("statuses", "ends"),
    [((OK, OK), True), ((OK, NOT_DELIVERED), False)],
    ids=["all-ran-answer-stands", "some-not-delivered-decide-again"],
)
async def test_an_answer_after_a_dropped_batch_stands_only_if_the_batch_ran(
    statuses: tuple[action_pb2.ActionStatus.ValueType, action_pb2.ActionStatus.ValueType],
    ends: bool,
) -> None:
    """A batch that ends with done is sent with its other actions first; if the stream
    drops before their results, the answer holds only when every one of them ran."""
    batch = json.dumps(
        {
            "thought": "t",
            "actions": [
                {"action": "click", "x": 10, "y": 10},
                {"action": "write", "content": "x"},
                {"action": "answer", "content": "submitted"},
            ],
        }
    )
    policy = RecordingPolicy([batch, ANSWER])
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        ids = [a.action_id for a in (await stream.observe(make_frame("f1"))).actions.actions]
        stream.call.cancel()
        await wait_until(lambda: not the_session(daemon).attached, "the session to detach")

        again = daemon.stream()
        resumed = await again.start("", resume_token=started.resume_token)
        assert list(resumed.pending_action_ids) == ids
        reply = await again.observe(
            make_frame("f2"), [result(i, s) for i, s in zip(ids, statuses, strict=True)]
        )
        assert reply.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
        if ends:
            assert reply.ended.answer == "submitted"
            assert policy.decisions == 1
        else:
            assert reply.ended.answer == "done"  # decided again, from the fresh frame
            assert policy.decisions == 2


Builder = Callable[[list[str]], tuple[list[action_pb2.ActionResult], frame_pb2.Frame | None]]


async def _resumed_after_one_batch(daemon: Daemon) -> tuple[Stream, list[str]]:
    stream = daemon.stream()
    started = await stream.start()
    ids = [a.action_id for a in (await stream.observe(make_frame("f1"))).actions.actions]
    stream.call.cancel()
    await wait_until(lambda: not the_session(daemon).attached, "the session to detach")
    again = daemon.stream()
    await again.start("", resume_token=started.resume_token)
    return again, ids


@pytest.mark.parametrize(
    ("build", "field", "text"),
    [
        (
            lambda ids: ([result(ids[0], OK), result("never-sent-1", OK)], make_frame("f2")),
            "observation.results[1].action_id",
            "never sent",
        ),
        (lambda ids: ([result(ids[0], OK)], make_frame("f2")), "observation.results", "missing"),
        (
            lambda ids: ([result(i, NOT_DELIVERED) for i in ids], None),
            "observation.frame",
            "fresh frame",
        ),
    ],
    ids=["ok-for-an-id-never-sent", "a-pending-id-left-out", "no-fresh-frame"],
)
async def test_the_first_observation_after_a_resume_is_checked(
    build: Builder, field: str, text: str
) -> None:
    """Results after a resume must cover exactly the pending ids (an OK for an id the
    daemon never sent is INVALID_ARGUMENT) and come with a fresh frame."""
    policy = RecordingPolicy([BATCH, CLICK])
    async with running_daemon([policy]) as daemon:
        again, ids = await _resumed_after_one_batch(daemon)
        results, frame = build(ids)
        await again.observe_nowait(frame, results)
        error = await again.error()
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        details = error.details() or ""
        assert details.startswith(field), details
        assert text in details
        assert policy.decisions == 1


async def test_not_delivered_is_refused_outside_a_resume() -> None:
    """NOT_DELIVERED means 'the batch never reached me': impossible on a live stream."""
    async with running_daemon([RecordingPolicy([CLICK, CLICK])]) as daemon:
        stream = daemon.stream()
        await stream.start()
        first = (await stream.observe(make_frame("f1"))).actions
        await stream.observe_nowait(
            make_frame("f2"), [result(first.actions[0].action_id, NOT_DELIVERED)]
        )
        error = await stream.error()
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "observation.results[0].status" in (error.details() or "")


async def test_results_reported_twice_across_a_resume_are_refused() -> None:
    """The daemon keeps its record of reported ids across streams: reporting an id again
    after a resume is an error, not a second execution record."""
    async with running_daemon([RecordingPolicy([CLICK, CLICK, CLICK])]) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        first = (await stream.observe(make_frame("f1"))).actions
        await stream.observe(make_frame("f2"), ok_results(first))  # step 2 sent
        stream.call.cancel()
        await wait_until(lambda: not the_session(daemon).attached, "the session to detach")
        again = daemon.stream()
        resumed = await again.start("", resume_token=started.resume_token)
        pending = list(resumed.pending_action_ids)
        stale = first.actions[0].action_id
        await again.observe_nowait(
            make_frame("f3"), [result(stale, OK)] + [result(i, OK) for i in pending]
        )
        error = await again.error()
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "already reported" in (error.details() or "")


async def test_resume_by_another_principal_is_permission_denied(tmp_path: Path) -> None:
    """A resume token is bound to the principal that started the session."""
    tokens = write_tokens(tmp_path, agent_a="agent", agent_b="agent")
    async with running_daemon([RecordingPolicy([CLICK])], tokens_file=str(tokens.path)) as daemon:
        first = Stream(daemon.channel, metadata=tokens.metadata("agent_a"))
        started = await first.start()
        first.call.cancel()
        await wait_until(lambda: not the_session(daemon).attached, "the session to detach")

        thief = Stream(daemon.channel, metadata=tokens.metadata("agent_b"))
        await thief.start_nowait("", resume_token=started.resume_token)
        error = await thief.error()
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED

        owner = Stream(daemon.channel, metadata=tokens.metadata("agent_a"))
        assert (await owner.start("", resume_token=started.resume_token)).resumed


async def test_an_operator_cancel_ends_a_detached_session() -> None:
    """ControlService.CancelSession on a detached session removes it at once."""
    async with running_daemon([RecordingPolicy([CLICK])]) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        stream.call.cancel()
        await wait_until(lambda: not the_session(daemon).attached, "the session to detach")
        await daemon.control.CancelSession(
            control_pb2.CancelSessionRequest(session_id=started.session_id, reason="ops")
        )
        assert len(daemon.running.registry) == 0


async def test_a_client_deadline_on_the_stream_detaches_the_session() -> None:
    """A RunSession call past its own deadline ends with DEADLINE_EXCEEDED; the policy's
    work for it is aborted and the session waits for a resume."""
    policy = RecordingPolicy([CLICK], block=True)
    async with running_daemon([policy]) as daemon:
        stream = Stream(daemon.channel, timeout=0.5)
        started = await stream.start()
        await stream.observe_nowait(make_frame("f1"))
        error = await stream.error()
        assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        await asyncio.wait_for(policy.abort_seen.wait(), GUARD_S)
        await wait_until(lambda: not the_session(daemon).attached, "the session to detach")
        assert the_session(daemon).session_id == started.session_id


async def test_a_delayed_link_still_carries_a_whole_session() -> None:
    """Latency on every chunk (both directions) slows a session but breaks nothing."""
    policy = RecordingPolicy([CLICK, ANSWER])
    async with running_daemon([policy]) as daemon, proxied(daemon) as (proxy, channel):
        proxy.delay_s = 0.05
        stream = Stream(channel)
        await stream.start()
        step = (await stream.observe(make_frame("f1"))).actions
        ended = await stream.observe(make_frame("f2"), ok_results(step))
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED


async def test_keepalive_detaches_a_session_whose_client_vanished_silently() -> None:
    """A half-open connection (the proxy swallows everything, no FIN, no RST) is found by
    the daemon's HTTP/2 keepalive even mid-step with no data flowing: the session
    detaches on its own and can be resumed. (Short keepalive here; 30 s + 10 s in
    production, inside the 60 s resume window.)"""
    policy = RecordingPolicy([CLICK, CLICK])
    async with (
        running_daemon([policy], keepalive_s=0.3, keepalive_timeout_s=0.3) as daemon,
        proxied(daemon) as (proxy, channel),
    ):
        stream = Stream(channel)
        started = await stream.start()
        await stream.observe(make_frame("f1"))
        proxy.blackhole = True
        await wait_until(lambda: not the_session(daemon).attached, "keepalive to detach it")
        again = daemon.stream()
        resumed = await again.start("", resume_token=started.resume_token)
        assert resumed.step == 1
