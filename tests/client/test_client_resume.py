"""Dropped streams, for real: a TCP proxy between the client and a scripted daemon
breaks the connection mid-step, and the client must stop acting, release held
input, reconnect, resume with its latest token, answer the daemon's pending
action ids from its own record, and never execute an action id twice.

The scripted daemon plays the daemon's half of the resume protocol
(protos/holodesk/v1/agent.proto, SessionStarted): resumed=true, the last step,
and the ids whose results it never received.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import grpc
import pytest

from holodesk.client import actions as a
from holodesk.client.channel import ChannelSettings
from holodesk.client.cli import main
from holodesk.client.events import LinkLost, Notice, Outcome, Reconnecting, Resumed
from holodesk.client.exit_codes import ExitCode
from holodesk.client.reconnect import ReconnectPolicy
from holodesk.client.safety import SafetySettings
from holodesk.client.session import SessionOptions, run_session
from holodesk.data.reader import Recording
from holodesk.platform.backends import fake
from holodesk.proto.v1 import action_pb2, agent_pb2
from tests.support.fault_proxy import ThreadedFaultProxy

from .gated import GatedBackend, gated_backend
from .scripted import Conversation, Script, ScriptedDaemon, done, key_down, type_text, wait

Daemon = Callable[[Script], ScriptedDaemon]
N = TypeVar("N")
OK = action_pb2.ACTION_STATUS_OK
NOT_DELIVERED = action_pb2.ACTION_STATUS_NOT_DELIVERED
FAST = ReconnectPolicy(initial_backoff_s=0.01, max_backoff_s=0.05)
# No hotkey here: these tests are about the stream (the hotkey has its own on Xvfb).
QUIET = SafetySettings(emergency_stop=None)


@pytest.fixture
def proxy_to() -> Iterator[Callable[[ScriptedDaemon], ThreadedFaultProxy]]:
    proxies: list[ThreadedFaultProxy] = []

    def start(server: ScriptedDaemon) -> ThreadedFaultProxy:
        proxy = ThreadedFaultProxy(server.port)
        proxies.append(proxy)
        return proxy

    yield start
    for proxy in proxies:
        proxy.stop()


class Notices:
    """Collects the session's notices; `lost` is set the moment the stream death is seen."""

    def __init__(self) -> None:
        self.seen: list[Notice] = []
        self.lost = asyncio.Event()

    def __call__(self, notice: Notice) -> None:
        self.seen.append(notice)
        if isinstance(notice, LinkLost):
            self.lost.set()

    def of(self, kind: type[N]) -> list[N]:
        return [n for n in self.seen if isinstance(n, kind)]


async def _until_gone(conv: Conversation) -> None:
    """Wait for the client to vanish (the proxy broke the stream)."""
    with contextlib.suppress(AssertionError, grpc.aio.AioRpcError):
        await conv.recv()


def _statuses(observation: agent_pb2.Observation) -> list[int]:
    return [r.status for r in observation.results]


async def test_drop_mid_batch_stops_acting_then_resumes_without_repeats(
    daemon: Daemon, proxy_to: Callable[[ScriptedDaemon], ThreadedFaultProxy]
) -> None:
    """Proves, for a connection reset while an action runs: the running action
    completes, the rest of the batch never starts, held keys are released, the
    client resumes with the latest token, reports OK for what ran and
    NOT_DELIVERED for what did not (with a fresh frame), and the session completes."""
    backend: GatedBackend = gated_backend()
    resumed: list[agent_pb2.Observation] = []

    async def script(conv: Conversation) -> None:
        if conv.index == 0:
            await conv.open()
            await conv.send_actions(
                1, key_down("k", "shift"), type_text("a1", "slow"), type_text("a2", "never")
            )
            await _until_gone(conv)
            return
        observation = await conv.resume(
            token="r-1", step=1, pending=["k", "a1", "a2"], new_token="r-2"
        )
        resumed.append(observation)
        await conv.send_actions(2, type_text("b1", "after"))
        await conv.recv_observation()
        await conv.send_actions(3, done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")

    server = daemon(script)
    proxy = proxy_to(server)
    notices = Notices()
    options = SessionOptions(on_notice=notices, reconnect=FAST, safety=QUIET)
    run = asyncio.create_task(run_session(proxy.target, "t", backend, options))

    assert await asyncio.to_thread(backend.input.entered.wait, 30), "the slow action never began"
    assert proxy.reset() == 1
    await asyncio.wait_for(notices.lost.wait(), 30)
    backend.input.gate.set()  # only now may the running action complete
    outcome = await run

    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert backend.input.events == [
        fake.Key("shift", True),
        fake.Text("slow"),
        fake.Key("shift", False),  # released when the stream died, before reconnecting
        fake.Text("after"),
    ]
    (observation,) = resumed
    assert [r.action_id for r in observation.results] == ["k", "a1", "a2"]
    assert _statuses(observation) == [OK, OK, NOT_DELIVERED]
    assert observation.HasField("frame")
    assert observation.frame.frame_id
    first_frame = server.agent.conversations[0].received[1].observation.frame
    assert observation.frame.frame_id != first_frame.frame_id
    assert [type(n) for n in notices.seen] == [LinkLost, Reconnecting, Resumed]
    assert notices.of(Resumed) == [Resumed("s-1", 1, 3)]
    assert outcome.history[0].results[2].status is a.ActionStatus.NOT_DELIVERED
    assert proxy.accepted == 2


async def test_drop_while_the_daemon_thinks_and_a_resent_id_is_not_repeated(
    daemon: Daemon, proxy_to: Callable[[ScriptedDaemon], ThreadedFaultProxy]
) -> None:
    """Proves: after a drop between steps the client resumes with no pending
    results, and an action id the daemon sends again (against the contract) gets
    its original result instead of running a second time."""
    backend = fake.create()
    proxies: list[ThreadedFaultProxy] = []
    second: list[agent_pb2.Observation] = []

    async def script(conv: Conversation) -> None:
        if conv.index == 0:
            await conv.open()
            await conv.send_actions(1, type_text("x", "once"))
            await conv.recv_observation()
            proxies[0].reset()  # while the "model" thinks about step 2
            await _until_gone(conv)
            return
        observation = await conv.resume(token="r-1", step=1, pending=[], new_token="r-2")
        assert not observation.results
        assert observation.HasField("frame")
        await conv.send_actions(2, type_text("x", "twice"), type_text("y", "new"))
        second.append(await conv.recv_observation())
        await conv.send_actions(3, done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")

    server = daemon(script)
    proxies.append(proxy_to(server))
    options = SessionOptions(reconnect=FAST, safety=QUIET)
    outcome = await run_session(proxies[0].target, "t", backend, options)

    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert [e for e in backend.input.events if isinstance(e, fake.Text)] == [
        fake.Text("once"),
        fake.Text("new"),
    ]
    assert _statuses(second[0]) == [OK, OK]
    start = server.agent.conversations[1].received[0].start
    assert start.resume_token == "r-1"
    assert start.task == "t"


async def test_a_step_lost_in_the_drop_keeps_the_recording_of_the_step_before(
    daemon: Daemon, proxy_to: Callable[[ScriptedDaemon], ThreadedFaultProxy], tmp_path: Path
) -> None:
    """Proves: when the daemon's step 2 never reached the client, the resume's
    NOT_DELIVERED results are recorded as step 2's, not over step 1's own."""
    backend = fake.create()
    proxies: list[ThreadedFaultProxy] = []

    async def script(conv: Conversation) -> None:
        if conv.index == 0:
            await conv.open()
            await conv.send_actions(1, type_text("x", "one"))
            await conv.recv_observation()
            proxies[0].reset()  # step 2 is "sent" into the broken stream
            await _until_gone(conv)
            return
        observation = await conv.resume(token="r-1", step=2, pending=["y"], new_token="r-2")
        assert _statuses(observation) == [NOT_DELIVERED]
        await conv.send_actions(3, done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")

    server = daemon(script)
    proxies.append(proxy_to(server))
    options = SessionOptions(reconnect=FAST, safety=QUIET, record_dir=tmp_path)
    outcome = await run_session(proxies[0].target, "t", backend, options)

    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert outcome.recording is not None
    steps = {step.step: step for step in Recording.open(outcome.recording).steps()}
    first, lost = steps[1].observation, steps[2].observation
    assert first is not None
    assert lost is not None
    assert [(r["action_id"], r["status"]) for r in first.results] == [("x", "ACTION_STATUS_OK")]
    assert [(r["action_id"], r["status"]) for r in lost.results] == [
        ("y", "ACTION_STATUS_NOT_DELIVERED")
    ]
    assert steps[2].actions is None  # it never arrived
    assert steps[3].actions is not None


async def test_each_resume_uses_the_latest_token(
    daemon: Daemon, proxy_to: Callable[[ScriptedDaemon], ThreadedFaultProxy]
) -> None:
    """Proves: two drops in a row resume with r-1, then with the token the first
    resume handed out (r-2), never an older one."""
    backend = fake.create()
    proxies: list[ThreadedFaultProxy] = []

    async def script(conv: Conversation) -> None:
        if conv.index == 0:
            await conv.open()
        else:
            index = conv.index
            await conv.resume(token=f"r-{index}", step=0, pending=[], new_token=f"r-{index + 1}")
        if conv.index < 2:
            proxies[0].reset()
            await _until_gone(conv)
            return
        await conv.send_actions(1, done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")

    server = daemon(script)
    proxies.append(proxy_to(server))
    outcome = await run_session(
        proxies[0].target, "t", backend, SessionOptions(reconnect=FAST, safety=QUIET)
    )
    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    tokens = [c.received[0].start.resume_token for c in server.agent.conversations]
    assert tokens == ["", "r-1", "r-2"]


async def test_stream_death_mid_batch_without_resume_runs_nothing_more(
    daemon: Daemon, proxy_to: Callable[[ScriptedDaemon], ThreadedFaultProxy]
) -> None:
    """Proves: with resuming turned off, a drop mid-batch still stops the batch
    after the running action, releases held input, and ends the session as an
    error that says so."""
    backend: GatedBackend = gated_backend()

    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(
            1, key_down("k", "ctrl"), type_text("a1", "slow"), type_text("a2", "never")
        )
        await _until_gone(conv)

    server = daemon(script)
    proxy = proxy_to(server)
    notices = Notices()
    options = SessionOptions(
        on_notice=notices, reconnect=ReconnectPolicy(max_attempts=0), safety=QUIET
    )
    run = asyncio.create_task(run_session(proxy.target, "t", backend, options))
    assert await asyncio.to_thread(backend.input.entered.wait, 30)
    proxy.reset()
    await asyncio.wait_for(notices.lost.wait(), 30)
    backend.input.gate.set()
    outcome = await run

    assert outcome.outcome is Outcome.ERROR
    assert outcome.status_code == "UNAVAILABLE"
    assert "resuming is turned off" in outcome.reason
    assert fake.Text("never") not in backend.input.events
    assert backend.input.held() == ((), ())
    assert backend.input.events[-1] == fake.Key("ctrl", False)
    (step,) = outcome.history
    assert [r.status for r in step.results] == [
        a.ActionStatus.OK,
        a.ActionStatus.OK,
        a.ActionStatus.NOT_DELIVERED,
    ]
    assert proxy.accepted == 1


async def test_reconnecting_gives_up_after_the_bounded_attempts(
    daemon: Daemon, proxy_to: Callable[[ScriptedDaemon], ThreadedFaultProxy]
) -> None:
    """Proves: when the daemon stays unreachable, the client tries exactly
    max_attempts times with backoff, then ends with a clear error."""
    backend = fake.create()
    proxies: list[ThreadedFaultProxy] = []

    async def script(conv: Conversation) -> None:
        await conv.open()
        proxies[0].refuse = True
        proxies[0].reset()
        await _until_gone(conv)

    server = daemon(script)
    proxies.append(proxy_to(server))
    notices = Notices()
    policy = ReconnectPolicy(max_attempts=3, initial_backoff_s=0.01, max_backoff_s=0.02)
    options = SessionOptions(on_notice=notices, reconnect=policy, safety=QUIET)
    outcome = await run_session(proxies[0].target, "t", backend, options)

    assert outcome.outcome is Outcome.ERROR
    assert outcome.status_code == "UNAVAILABLE"
    assert "could not resume session s-1: 3 attempt(s)" in outcome.reason
    assert [n.attempt for n in notices.of(Reconnecting)] == [1, 2, 3]
    assert proxies[0].accepted == 1 + 3
    assert server.conversations_started() == 1


def test_resume_refused_reports_the_session_lost_and_exits_5(
    daemon: Daemon,
    proxy_to: Callable[[ScriptedDaemon], ThreadedFaultProxy],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Proves: a daemon that no longer knows the session (NOT_FOUND on resume)
    ends the run with exit code 5 and a message that says the session was lost."""
    proxies: list[ThreadedFaultProxy] = []

    async def script(conv: Conversation) -> None:
        if conv.index == 0:
            await conv.open()
            await conv.send_actions(1, type_text("t", "x"))
            await conv.recv_observation()
            proxies[0].reset()
            await _until_gone(conv)
            return
        start = await conv.recv()
        assert start.start.resume_token == "r-1"
        await conv.abort(grpc.StatusCode.NOT_FOUND, "unknown or expired resume token")

    server = daemon(script)
    proxies.append(proxy_to(server))
    code = main(
        [
            "run",
            "--server",
            proxies[0].target,
            "--backend",
            "fake",
            "--no-estop",
            "--reconnect-attempts",
            "3",
            "t",
        ]
    )
    err = capsys.readouterr().err
    assert code == ExitCode.DAEMON_ERROR, err
    assert "connection lost" in err
    assert "session s-1 was lost" in err
    assert "NOT_FOUND: unknown or expired resume token" in err


async def test_keepalive_notices_a_silent_connection_and_resumes(
    proxy_to: Callable[[ScriptedDaemon], ThreadedFaultProxy],
) -> None:
    """Proves: when the connection goes silent (no RST, no FIN: a pulled cable),
    keepalive declares it dead and the client resumes on a new connection."""
    backend = fake.create()
    proxies: list[ThreadedFaultProxy] = []

    async def script(conv: Conversation) -> None:
        if conv.index == 0:
            await conv.open()
            proxies[0].blackhole()
            await _until_gone(conv)
            return
        await conv.resume(token="r-1", step=0, pending=[], new_token="r-2")
        await conv.send_actions(1, done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")

    # The daemon must tolerate pings this frequent (the real one sets its own policy).
    server = ScriptedDaemon(
        script,
        options=[
            ("grpc.http2.min_recv_ping_interval_without_data_ms", 10),
            ("grpc.http2.max_ping_strikes", 0),
        ],
    )
    try:
        proxies.append(proxy_to(server))
        notices = Notices()
        channel = ChannelSettings(keepalive_time_ms=200, keepalive_timeout_ms=500)
        options = SessionOptions(on_notice=notices, channel=channel, reconnect=FAST, safety=QUIET)
        outcome = await run_session(proxies[0].target, "t", backend, options)
    finally:
        server.stop()
    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert len(notices.of(LinkLost)) == 1
    assert proxies[0].accepted == 2


async def test_goaway_from_a_draining_daemon_is_resumed() -> None:
    """Proves: a daemon that retires the connection (GOAWAY, then closes it after
    its grace period) does not end the session: the client resumes."""
    backend = fake.create()

    async def script(conv: Conversation) -> None:
        if conv.index == 0:
            await conv.open()
            await _until_gone(conv)  # until the connection's age runs out
            return
        index = conv.index
        await conv.resume(token=f"r-{index}", step=0, pending=[], new_token=f"r-{index + 1}")
        await conv.send_actions(1, wait("w", 0), done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")

    server = ScriptedDaemon(
        script,
        options=[
            ("grpc.max_connection_age_ms", 300),
            ("grpc.max_connection_age_grace_ms", 200),
        ],
    )
    try:
        outcome = await run_session(
            server.target, "t", backend, SessionOptions(reconnect=FAST, safety=QUIET)
        )
    finally:
        server.stop()
    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert server.conversations_started() >= 2


async def test_a_daemon_still_holding_the_old_stream_is_asked_again(
    daemon: Daemon, proxy_to: Callable[[ScriptedDaemon], ThreadedFaultProxy]
) -> None:
    """Proves: when the client notices the drop before the daemon does, the daemon
    refuses the resume (FAILED_PRECONDITION: still attached); the client backs off
    and asks again with the same token instead of giving up."""
    backend = fake.create()
    proxies: list[ThreadedFaultProxy] = []

    async def script(conv: Conversation) -> None:
        if conv.index == 0:
            await conv.open()
            proxies[0].reset()
            await _until_gone(conv)
            return
        if conv.index == 1:
            start = await conv.recv()
            assert start.start.resume_token == "r-1"
            await conv.abort(
                grpc.StatusCode.FAILED_PRECONDITION, "session s-1 is attached to a live stream"
            )
            return
        await conv.resume(token="r-1", step=0, pending=[], new_token="r-2")
        await conv.send_actions(1, done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")

    server = daemon(script)
    proxies.append(proxy_to(server))
    notices = Notices()
    options = SessionOptions(on_notice=notices, reconnect=FAST, safety=QUIET)
    outcome = await run_session(proxies[0].target, "t", backend, options)
    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert [n.attempt for n in notices.of(Reconnecting)] == [1, 2]
    assert "FAILED_PRECONDITION" in notices.of(Reconnecting)[1].cause


async def test_a_protocol_violation_is_not_retried(
    daemon: Daemon, proxy_to: Callable[[ScriptedDaemon], ThreadedFaultProxy]
) -> None:
    """Proves: outside a resume, FAILED_PRECONDITION is the daemon's verdict, not a
    dead link: the session ends with it and nothing reconnects."""
    backend = fake.create()

    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.abort(grpc.StatusCode.FAILED_PRECONDITION, "observation before start")

    server = daemon(script)
    proxy = proxy_to(server)
    outcome = await run_session(
        proxy.target, "t", backend, SessionOptions(reconnect=FAST, safety=QUIET)
    )
    assert outcome.outcome is Outcome.ERROR
    assert outcome.status_code == "FAILED_PRECONDITION"
    assert proxy.accepted == 1
