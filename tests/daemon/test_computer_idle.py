"""An attached desktop with nothing to do, against a real daemon on 127.0.0.1: its
heartbeat refreshes and a caller's GetFrame(refresh) are no steps (only the batches
callers send count against --max-steps), and while it waits for a caller it says so
(ListSessions, the live view) instead of THINKING."""

from __future__ import annotations

import asyncio
import itertools

import aiohttp

from holodesk.daemon.session.sessions import Session
from holodesk.daemon.session.values import SessionState
from holodesk.proto.v1 import agent_pb2, computer_pb2, control_pb2
from tests.daemon.computer_support import act_request, attach, click, computer, results
from tests.daemon.support import GUARD_S, Stream, make_frame, running_daemon, wait_until
from tests.daemon.test_web_live_view import Events

# --step-timeout-s: an idle desktop asks for a fresh frame every half of it.
QUICK_STEP_TIMEOUT_S = 0.4


class Frames:
    """Fresh frame ids for the test's client (f1 went with the attach)."""

    def __init__(self) -> None:
        self._ids = (f"f{n}" for n in itertools.count(2))

    def next(self) -> str:
        return next(self._ids)


async def answer_refresh(desk: Stream, frames: Frames, step: int) -> str:
    """The next message is a refresh: no actions, the last step's number repeated; the
    id of the frame that answered it."""
    refresh = await desk.recv()
    assert refresh.WhichOneof("event") == "actions", refresh
    assert not refresh.actions.actions
    assert refresh.actions.step == step
    frame_id = frames.next()
    await desk.observe_nowait(make_frame(frame_id, 320, 200))
    return frame_id


async def next_batch(desk: Stream, frames: Frames, step: int) -> agent_pb2.Actions:
    """The next batch that carries actions, answering the refreshes before it."""
    while True:
        response = await desk.recv()
        assert response.WhichOneof("event") == "actions", response
        if response.actions.actions:
            return response.actions
        assert response.actions.step == step
        await desk.observe_nowait(make_frame(frames.next(), 320, 200))


def state(session: Session) -> SessionState:
    """Read afresh (the daemon changes it between two reads of the test)."""
    return session.state


async def test_idle_refreshes_do_not_use_up_the_step_limit() -> None:
    async with running_daemon([], max_steps=2, step_timeout_s=QUICK_STEP_TIMEOUT_S) as daemon:
        desk, started = await attach(daemon)
        session = daemon.running.registry.get(started.session_id)
        api = computer(daemon.channel)
        frames = Frames()
        for _ in range(3):  # more heartbeats than the limit has steps
            await answer_refresh(desk, frames, step=0)
        refreshed = asyncio.ensure_future(
            api.GetFrame(computer_pb2.GetFrameRequest(desktop_id="desk", refresh=True))
        )
        answered = []
        while not refreshed.done():  # a heartbeat may come first or after: also no step
            answered.append(await answer_refresh(desk, frames, step=0))
        # A frame sent for the refresh (a heartbeat answered before the reply came may
        # have followed it); the session's window takes the newest in place of the last.
        assert refreshed.result().frame.frame_id in answered
        await wait_until(
            lambda: session.frames[-1].frame_id == answered[-1], "the newest frame taken"
        )
        assert len(session.frames) == 1
        assert session.step == 0
        assert session.ended is None

        call = api.Act(act_request("desk", click("c1", 5, 5)))
        batch = await next_batch(desk, frames, step=0)
        assert batch.step == 1
        await desk.observe_nowait(make_frame(frames.next(), 320, 200), results(batch))
        assert (await asyncio.wait_for(call, GUARD_S)).results[0].action_id == "c1"
        call = api.Act(act_request("desk", click("c2", 6, 6)))
        batch = await next_batch(desk, frames, step=1)
        assert batch.step == 2
        # The two batches the caller sent are the two steps the limit allows.
        ended = await desk.observe(make_frame(frames.next(), 320, 200), results(batch))
        assert ended.WhichOneof("event") == "ended"
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_STEP_LIMIT
        assert ended.ended.steps == 2
        assert (await asyncio.wait_for(call, GUARD_S)).results[0].action_id == "c2"


async def test_an_idle_desktop_waits_for_its_caller_and_is_not_thinking() -> None:
    async with (
        running_daemon([], web="127.0.0.1:0") as daemon,
        aiohttp.ClientSession() as http,
    ):
        desk, started = await attach(daemon)
        session = daemon.running.registry.get(started.session_id)
        # The policy waits for a caller's batch (a heartbeat a minute away).
        await wait_until(
            lambda: session.state is not SessionState.WAITING_FOR_CLIENT,
            "the desktop's policy waits for a caller",
        )
        listed = await daemon.control.ListSessions(control_pb2.ListSessionsRequest())
        (info,) = listed.sessions
        assert info.state == control_pb2.SESSION_STATE_WAITING_FOR_CLIENT
        assert daemon.running.web is not None
        url = daemon.running.web.url.rstrip("/") + "/api/sessions"
        async with http.get(url) as response:
            (shown,) = (await response.json())["sessions"]
        assert shown["state"] == "waiting_for_caller"
        assert session.state is SessionState.WAITING_FOR_CALLER

        # A batch on the desktop: its client runs it (waiting for the client), then the
        # desktop waits for its caller again.
        call = computer(daemon.channel).Act(act_request("desk", click("c1", 1, 1)))
        batch = (await desk.recv()).actions
        assert state(session) is SessionState.WAITING_FOR_CLIENT
        await desk.observe_nowait(make_frame("f2", 320, 200), results(batch))
        await asyncio.wait_for(call, GUARD_S)
        await wait_until(
            lambda: session.state is SessionState.WAITING_FOR_CALLER,
            "the desktop waits for its caller again",
        )


async def test_a_desktop_is_waiting_for_its_caller_from_its_first_step_on() -> None:
    # The live view hears every state change as it happens: the desktop's first step
    # goes from waiting for its client straight to waiting for its caller, never by
    # THINKING (the policy is known to relay from the session's opening).
    async with (
        running_daemon([], web="127.0.0.1:0") as daemon,
        aiohttp.ClientSession() as http,
    ):
        assert daemon.running.web is not None
        url = daemon.running.web.url.rstrip("/") + "/api/events"
        async with http.get(url) as response:
            events = Events(response)
            kind, _ = await events.next()
            assert kind == "snapshot"
            desk = Stream(daemon.channel)
            started = await desk.start("desk", policy="computer")
            await desk.observe_nowait(make_frame("f1", 320, 200))
            states: list[str] = []
            while not states or states[-1] != "waiting_for_caller":
                kind, data = await events.next()
                if kind == "session" and data["session_id"] == started.session_id:
                    states.append(data["state"])
            assert "thinking" not in states, states
        session = daemon.running.registry.get(started.session_id)
        assert session.state is SessionState.WAITING_FOR_CALLER
