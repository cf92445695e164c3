"""run_session against a real grpc.aio server running a scripted AgentService."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import grpc

from holodesk.client import actions as a
from holodesk.client.events import Outcome
from holodesk.client.prompt import NoUserError
from holodesk.client.session import SessionOptions, StepRecord, run_session
from holodesk.platform.backends import fake
from holodesk.platform.base import MouseButton
from holodesk.proto.v1 import action_pb2, agent_pb2, frame_pb2

from .scripted import (
    Conversation,
    Script,
    ScriptedDaemon,
    ask_user,
    click,
    done,
    fail,
    key_down,
    type_text,
    wait,
)

Daemon = Callable[[Script], ScriptedDaemon]
OK = action_pb2.ACTION_STATUS_OK
FAILED = action_pb2.ACTION_STATUS_FAILED


def _statuses(observation: agent_pb2.Observation) -> list[int]:
    return [r.status for r in observation.results]


def _observations(conversation: Conversation) -> list[agent_pb2.Observation]:
    return [m.observation for m in conversation.received if m.WhichOneof("event") == "observation"]


async def _until_held(backend: fake.FakeBackend, key: str) -> None:
    # The key is pressed on the session's backend thread: nothing to await but its state.
    while key not in backend.input.held()[0]:  # noqa: ASYNC110
        await asyncio.sleep(0.005)


async def test_full_session_to_done(daemon: Daemon, backend: fake.FakeBackend) -> None:
    async def script(conv: Conversation) -> None:
        frame = await conv.open()
        await conv.send_actions(
            1, click("a1", frame.frame_id, 320, 200), type_text("a2", "hi"), thought="click it"
        )
        await conv.recv_observation()
        await conv.send_actions(2, done("a3", "all good"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="all good")

    server = daemon(script)
    steps: list[StepRecord] = []
    options = SessionOptions(policy="scripted", max_steps=9, on_step=steps.append)
    outcome = await run_session(server.target, "greet", backend, options)

    assert outcome.outcome is Outcome.SUCCEEDED
    assert outcome.answer == "all good"
    assert outcome.session_id == "s-1"
    assert outcome.steps == 2
    assert [r.step for r in outcome.history] == [1, 2]
    assert steps == list(outcome.history)
    assert outcome.history[0].thought == "click it"
    # The 640x400 frame of the 1280x800 primary display: (320, 200) is (640, 400).
    assert backend.input.events == [
        fake.Move(640, 400),
        fake.Button(MouseButton.LEFT, True),
        fake.Button(MouseButton.LEFT, False),
        fake.Text("hi"),
    ]
    conv = server.conversation
    start = conv.received[0].start
    assert (start.task, start.policy, start.max_steps) == ("greet", "scripted", 9)
    assert [d.display_id for d in start.displays] == ["main", "retina"]
    assert start.displays[1].bounds.x == -2560
    first, second, third = _observations(conv)
    assert not first.results
    assert (first.frame.size.width, first.frame.size.height) == (640, 400)
    assert first.frame.encoding == frame_pb2.IMAGE_ENCODING_PNG
    assert first.frame.source.width == 1280
    assert _statuses(second) == [OK, OK]
    assert second.frame.frame_id
    assert second.frame.frame_id != first.frame.frame_id
    assert _statuses(third) == [OK]
    assert not third.HasField("frame")


async def test_fail_ends_the_session_as_failed(daemon: Daemon, backend: fake.FakeBackend) -> None:
    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(1, type_text("t", "x"), fail("f", "cannot find it"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_FAILED, reason="cannot find it")

    server = daemon(script)
    outcome = await run_session(server.target, "find it", backend)
    assert outcome.outcome is Outcome.FAILED
    assert outcome.reason == "cannot find it"
    last = _observations(server.conversation)[-1]
    assert _statuses(last) == [OK, OK]
    assert not last.HasField("frame")


async def test_ask_user_sends_the_reply_with_a_fresh_frame(
    daemon: Daemon, backend: fake.FakeBackend
) -> None:
    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(1, ask_user("q", "Which account?"))
        await conv.recv_observation()
        await conv.send_actions(2, done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")

    questions: list[str] = []

    def answer(question: str) -> str:
        questions.append(question)
        return "the work one"

    server = daemon(script)
    outcome = await run_session(server.target, "t", backend, SessionOptions(ask_user=answer))
    assert outcome.outcome is Outcome.SUCCEEDED
    assert questions == ["Which account?"]
    reply = _observations(server.conversation)[1]
    assert reply.user_reply == "the work one"
    assert _statuses(reply) == [OK]
    assert reply.HasField("frame")


async def test_ask_user_without_anyone_to_ask_fails_the_action(
    daemon: Daemon, backend: fake.FakeBackend
) -> None:
    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(1, ask_user("q", "Anyone?"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_FAILED, reason="no reply")

    def nobody(question: str) -> str:
        raise NoUserError("no terminal to prompt on")

    server = daemon(script)
    outcome = await run_session(server.target, "t", backend, SessionOptions(ask_user=nobody))
    assert outcome.outcome is Outcome.FAILED
    observation = _observations(server.conversation)[1]
    assert _statuses(observation) == [FAILED]
    assert observation.results[0].error == "no terminal to prompt on"
    assert observation.user_reply == ""
    assert outcome.history[0].results[0].status is a.ActionStatus.FAILED


async def test_cancel_sends_cancel_and_releases_held_input(
    daemon: Daemon, backend: fake.FakeBackend
) -> None:
    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(1, key_down("k", "shift"), wait("w", 60_000))
        message = await conv.recv()
        if message.WhichOneof("event") == "cancel":
            await conv.end(
                agent_pb2.SESSION_OUTCOME_CANCELLED, reason=f"client: {message.cancel.reason}"
            )

    server = daemon(script)
    run = asyncio.create_task(run_session(server.target, "t", backend))
    await _until_held(backend, "shift")
    run.cancel()
    outcome = await run

    assert outcome.outcome is Outcome.CANCELLED
    assert outcome.reason == "client: cancelled by the user"
    # The interrupted step is still reported.
    (step,) = outcome.history
    assert [r.status for r in step.results] == [a.ActionStatus.OK, a.ActionStatus.FAILED]
    assert step.results[1].error == "stopped by the user"
    assert backend.input.held() == ((), ())
    assert backend.input.events[-1] == fake.Key("shift", False)
    assert server.conversation.received[-1].WhichOneof("event") == "cancel"


async def test_server_abort_gives_a_clear_error_and_releases_input(
    daemon: Daemon, backend: fake.FakeBackend
) -> None:
    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(1, key_down("k", "ctrl"))
        await conv.recv_observation()
        await conv.abort(grpc.StatusCode.INVALID_ARGUMENT, "observation.frame: too large")

    server = daemon(script)
    outcome = await run_session(server.target, "t", backend)
    assert outcome.outcome is Outcome.ERROR
    assert outcome.status_code == "INVALID_ARGUMENT"
    assert outcome.reason == (
        "the daemon ended the stream: INVALID_ARGUMENT: observation.frame: too large"
    )
    assert outcome.steps == 1
    assert backend.input.held() == ((), ())
    assert backend.input.events == [fake.Key("ctrl", True), fake.Key("ctrl", False)]


async def test_step_limit_outcome(daemon: Daemon, backend: fake.FakeBackend) -> None:
    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.end(agent_pb2.SESSION_OUTCOME_STEP_LIMIT, reason="30 steps")

    outcome = await run_session(daemon(script).target, "t", backend)
    assert outcome.outcome is Outcome.STEP_LIMIT
    assert outcome.reason == "30 steps"


async def test_time_limit_outcome(daemon: Daemon, backend: fake.FakeBackend) -> None:
    """The daemon's TIME_LIMIT ending is its own outcome, not a FAILED one."""

    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.end(agent_pb2.SESSION_OUTCOME_TIME_LIMIT, reason="time limit: 60 s")

    outcome = await run_session(daemon(script).target, "t", backend)
    assert outcome.outcome is Outcome.TIME_LIMIT
    assert outcome.reason == "time limit: 60 s"


async def test_actions_before_started_is_a_protocol_error(
    daemon: Daemon, backend: fake.FakeBackend
) -> None:
    async def script(conv: Conversation) -> None:
        await conv.recv()
        await conv.send_actions(1, type_text("t", "x"))
        await conv.recv()  # the client's cancel

    server = daemon(script)
    outcome = await run_session(server.target, "t", backend)
    assert outcome.outcome is Outcome.ERROR
    assert "expected 'started', the daemon sent 'actions'" in outcome.reason
    assert backend.input.events == []
    assert server.conversation.received[-1].cancel.reason == outcome.reason


async def test_actions_after_done_is_a_protocol_error(
    daemon: Daemon, backend: fake.FakeBackend
) -> None:
    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(1, done("d", "x"))
        await conv.recv_observation()
        await conv.send_actions(2, type_text("t", "late"))
        await conv.recv()

    outcome = await run_session(daemon(script).target, "t", backend)
    assert outcome.outcome is Outcome.ERROR
    assert "expected 'ended' after done, the daemon sent 'actions'" in outcome.reason
    assert fake.Text("late") not in backend.input.events


async def test_stream_closed_without_ended(daemon: Daemon, backend: fake.FakeBackend) -> None:
    async def script(conv: Conversation) -> None:
        await conv.open()

    outcome = await run_session(daemon(script).target, "t", backend)
    assert outcome.outcome is Outcome.ERROR
    assert outcome.reason == "the daemon closed the stream without ending the session"


async def test_frame_over_the_daemons_limit_ends_the_session_clearly(
    daemon: Daemon, backend: fake.FakeBackend
) -> None:
    async def script(conv: Conversation) -> None:
        await conv.recv()
        spec = frame_pb2.FrameSpec(max_width=640, max_height=640, max_bytes=100)
        started = agent_pb2.SessionStarted(session_id="s", frame_spec=spec)
        await conv.send(agent_pb2.RunSessionResponse(started=started))
        await conv.recv()

    server = daemon(script)
    outcome = await run_session(server.target, "t", backend)
    assert outcome.outcome is Outcome.ERROR
    assert "over the daemon's limit of 100 bytes" in outcome.reason
    assert server.conversation.received[-1].cancel.reason == outcome.reason


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_unreachable_daemon(backend: fake.FakeBackend) -> None:
    target = f"127.0.0.1:{_unused_port()}"
    outcome = await run_session(target, "t", backend)
    assert outcome.outcome is Outcome.ERROR
    assert outcome.status_code == "UNAVAILABLE"
    assert outcome.reason.startswith(f"could not reach the daemon at {target}: UNAVAILABLE")


async def test_whole_desktop_frames_map_across_displays(
    daemon: Daemon, backend: fake.FakeBackend
) -> None:
    async def script(conv: Conversation) -> None:
        frame = await conv.open()  # the 3840x1600 desktop sent as 640x267
        await conv.send_actions(1, click("c", frame.frame_id, 1, 1))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED)

    server = daemon(script)
    outcome = await run_session(server.target, "t", backend, SessionOptions(display="all"))
    assert outcome.outcome is Outcome.SUCCEEDED
    first = _observations(server.conversation)[0].frame
    assert first.display_id == ""
    assert (first.source.x, first.source.y, first.source.width) == (-2560, -200, 3840)
    assert (first.size.width, first.size.height) == (640, 267)
    assert backend.input.events[0] == fake.Move(-2554, -194)
