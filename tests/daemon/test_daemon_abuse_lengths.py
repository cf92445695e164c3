"""Issue 15 item 6: every string and repeated field has a limit (holodesk.proto.limits).

Past it a real daemon answers INVALID_ARGUMENT naming the field, before the value
costs it anything: no long conversion, no log flood, no session whose task makes
ListSessions too large to answer. Log lines cut long values, and the task text is
logged in full at INFO only when the operator asks for it (--log-task).
"""

from __future__ import annotations

import asyncio
import io
import logging
import time
from collections.abc import Iterator

import grpc
import pytest
from google.rpc import error_details_pb2

from holodesk.daemon import logs
from holodesk.daemon.actions import Click, TypeText
from holodesk.daemon.geometry import Point
from holodesk.daemon.policies.base import Decision
from holodesk.daemon.steps import StepContext
from holodesk.proto import limits
from holodesk.proto.v1 import (
    action_pb2,
    agent_pb2,
    agent_pb2_grpc,
    control_pb2,
    geometry_pb2,
)
from tests.daemon.support import (
    GUARD_S,
    Daemon,
    Stream,
    holo,
    make_frame,
    ok_results,
    rich_status,
    running_daemon,
    scripted_policy,
)
from tests.daemon.test_daemon_scale import InstantPolicy

pytestmark = pytest.mark.abuse

CLICK = holo({"action": "click", "x": 10, "y": 10})
MIB = 1024 * 1024


@pytest.fixture
def text_log() -> Iterator[io.StringIO]:
    """Every record logged while the test runs, as the daemon's text handler writes it."""
    stream = io.StringIO()
    handler = logs.make_handler("text", stream)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def violated_field(error: grpc.aio.AioRpcError) -> str:
    """The field a refusal names in its BadRequest detail."""
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
    for detail in rich_status(error).details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            (violation,) = bad.field_violations
            return str(violation.field)
    raise AssertionError(f"no BadRequest in {error.details()}")


async def refused_start(daemon: Daemon, start: agent_pb2.SessionStart) -> str:
    stream = daemon.stream()
    await stream.send(agent_pb2.RunSessionRequest(start=start))
    return violated_field(await stream.error())


async def test_oversized_start_fields_are_refused_naming_the_field() -> None:
    too_long = limits.TEXT_CHARS + 1
    cases = {
        "start.task": agent_pb2.SessionStart(task="t" * too_long),
        "start.policy": agent_pb2.SessionStart(task="t", policy="p" * 1000),
        "start.client.hostname": agent_pb2.SessionStart(
            task="t", client=agent_pb2.ClientInfo(hostname="h" * 1000)
        ),
        "start.displays[1].display_id": agent_pb2.SessionStart(
            task="t",
            displays=[
                geometry_pb2.Display(display_id="ok"),
                geometry_pb2.Display(display_id="d" * 1000),
            ],
        ),
    }
    async with running_daemon([scripted_policy([CLICK])]) as daemon:
        for field, start in cases.items():
            assert await refused_start(daemon, start) == field
        assert len(daemon.running.registry) == 0


async def test_a_million_displays_are_refused_without_blocking_the_daemon() -> None:
    """Sent pre-serialized (the client's own cost is not the daemon's); a ticker on the
    daemon's event loop measures the longest stall while the daemon handles it (3.8 s
    when each display was converted first)."""
    start = agent_pb2.SessionStart(
        task="t", displays=[geometry_pb2.Display(display_id=str(n)) for n in range(1_000_000)]
    )
    wire = agent_pb2.RunSessionRequest(start=start).SerializeToString()
    async with running_daemon([scripted_policy([CLICK])]) as daemon:
        call = daemon.channel.stream_stream(
            "/holodesk.v1.AgentService/RunSession",
            request_serializer=None,
            response_deserializer=agent_pb2.RunSessionResponse.FromString,
        )()
        longest = 0.0
        done = asyncio.Event()

        async def tick() -> None:
            nonlocal longest
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0.01)
                now = time.perf_counter()
                longest = max(longest, now - last)
                last = now

        ticker = asyncio.create_task(tick())
        await call.write(wire)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await asyncio.wait_for(call.read(), GUARD_S)
        done.set()
        await ticker
    assert violated_field(refused.value) == "start.displays"
    assert "at most 64 entries" in (refused.value.details() or "")
    assert longest < 1.5, f"the event loop stalled {longest:.2f} s"


async def test_big_tasks_never_blind_list_sessions() -> None:
    """Four 10 MiB tasks used to start four sessions whose list no longer fit one
    message; now they are refused, and tasks at the limit are listed as previews."""
    async with running_daemon([scripted_policy([CLICK])]) as daemon:
        for _ in range(4):
            field = await refused_start(daemon, agent_pb2.SessionStart(task="x" * (10 * MIB)))
            assert field == "start.task"
        streams = [Stream(daemon.channel) for _ in range(4)]
        for stream in streams:
            await stream.start("é" * limits.TEXT_CHARS)
        listed = await daemon.control.ListSessions(control_pb2.ListSessionsRequest())
    assert len(listed.sessions) == 4
    assert all(len(s.task) <= limits.TASK_PREVIEW_CHARS for s in listed.sessions)


async def test_a_30_mib_action_id_is_refused_and_barely_logged(text_log: io.StringIO) -> None:
    async with running_daemon([scripted_policy([CLICK] * 2)]) as daemon:
        stream = daemon.stream()
        await stream.start()
        await stream.observe(make_frame("f1", 64, 48))
        bogus = action_pb2.ActionResult(
            action_id="a" * (30 * MIB), status=action_pb2.ACTION_STATUS_OK
        )
        await stream.observe_nowait(make_frame("f2", 64, 48), [bogus])
        error = await stream.error()
    assert violated_field(error) == "observation.results[0].action_id"
    assert len(error.details() or "") < 1024
    assert len(text_log.getvalue()) < 64 * 1024


async def test_an_oversized_ask_user_reply_is_refused() -> None:
    async with running_daemon([scripted_policy([CLICK] * 2)]) as daemon:
        stream = daemon.stream()
        await stream.start()
        await stream.send(
            agent_pb2.RunSessionRequest(
                observation=agent_pb2.Observation(
                    frame=make_frame("f1", 64, 48), user_reply="r" * (limits.TEXT_CHARS + 1)
                )
            )
        )
        assert violated_field(await stream.error()) == "observation.user_reply"


async def test_locate_report_reward_and_control_requests_are_bounded() -> None:
    async with running_daemon([scripted_policy([CLICK])]) as daemon:
        agent = agent_pb2_grpc.AgentServiceStub(daemon.channel)
        calls = {
            "descriptions": agent.Locate(
                agent_pb2.LocateRequest(frame=make_frame("f", 64, 48), descriptions=["x"] * 65)
            ),
            "descriptions[0]": agent.Locate(
                agent_pb2.LocateRequest(frame=make_frame("f", 64, 48), descriptions=["x" * 5000])
            ),
            "frame.frame_id": agent.Locate(
                agent_pb2.LocateRequest(frame=make_frame("f" * 200, 64, 48), descriptions=["x"])
            ),
            "session_id": daemon.control.PauseSession(
                control_pb2.PauseSessionRequest(session_id="s" * MIB)
            ),
            "note": agent.ReportReward(
                agent_pb2.ReportRewardRequest(session_id="s", reward=1.0, note="n" * 70000)
            ),
        }
        for field, call in calls.items():
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call
            assert violated_field(refused.value) == field


async def test_the_task_is_logged_in_full_only_when_asked(text_log: io.StringIO) -> None:
    task = "open the quarterly report and " + "read every line " * 20
    async with running_daemon([scripted_policy([CLICK])]) as daemon:
        await daemon.stream().start(task)
    assert task not in text_log.getvalue()
    assert f"{len(task)} characters" in text_log.getvalue()
    text_log.truncate(0)
    async with running_daemon([scripted_policy([CLICK])], log_task=True) as daemon:
        await daemon.stream().start(task)
    assert task in text_log.getvalue()


def test_log_lines_cut_long_values(text_log: io.StringIO) -> None:
    logging.getLogger("holodesk.test").warning("value %s and %r", "v" * MIB, b"b" * MIB)
    line = text_log.getvalue()
    assert len(line) < 2 * logs.MAX_LOG_VALUE_CHARS + 512
    assert "more characters" in line


class FloodingPolicy(InstantPolicy):
    """Decides more actions than a batch may hold, with an endless thought."""

    async def decide(self, context: StepContext) -> Decision:
        clicks = tuple(Click(Point(n, n)) for n in range(limits.MAX_ACTIONS + 36))
        return Decision(clicks, thought="why " * limits.TEXT_CHARS)


async def test_the_daemon_never_sends_more_than_the_contract_allows() -> None:
    """A policy's 100 actions go out as a batch of 64 (whose results fit one
    Observation) and its thought is cut to its limit."""
    async with running_daemon([FloodingPolicy()]) as daemon:
        stream = daemon.stream()
        await stream.start()
        step = (await stream.observe(make_frame("f1", 64, 48))).actions
        assert len(step.actions) == limits.MAX_ACTIONS
        assert len(step.thought) == limits.TEXT_CHARS
        # ...and its results are accepted: the next step comes.
        assert (await stream.observe(make_frame("f2", 64, 48), ok_results(step))).actions.actions


def test_the_client_cuts_what_it_sends_to_the_contracts_limits() -> None:
    """A client's long error message or ask_user reply must not cost its session."""
    from holodesk.client import actions as client_actions
    from holodesk.client.convert import observation

    failed = client_actions.ActionResult("a-1", client_actions.ActionStatus.FAILED, "e" * MIB)
    sent = observation([failed], None, user_reply="r" * MIB)
    assert limits.first_violation(sent) is None


class LongTypingPolicy(InstantPolicy):
    async def decide(self, context: StepContext) -> Decision:
        return Decision((Click(Point(1, 1)), TypeText("x" * (limits.TEXT_CHARS + 1))))


async def test_an_action_over_its_limit_is_never_sent() -> None:
    """Text to type cannot be cut without changing the action: the session fails,
    naming the field, and the client never receives it."""
    async with running_daemon([LongTypingPolicy()]) as daemon:
        stream = daemon.stream()
        await stream.start()
        reply = await stream.observe(make_frame("f1", 64, 48))
    assert reply.WhichOneof("event") == "ended", reply
    assert reply.ended.outcome == agent_pb2.SESSION_OUTCOME_FAILED
    assert "actions[1].type_text.text: at most 16384 characters" in reply.ended.reason
