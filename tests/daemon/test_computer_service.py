"""ComputerService against a real daemon on 127.0.0.1: a desktop attached through a
real RunSession stream (the test plays its client), driven from a gRPC client:
list, frame, act, exactly-once ids, coordinate mapping, detach and resume, step-limit
rollover and the idle heartbeat."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from google.protobuf import timestamp_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from holodesk.proto.v1 import action_pb2, agent_pb2, computer_pb2, frame_pb2, geometry_pb2
from tests.daemon.computer_support import (
    act_request,
    attach,
    click,
    computer,
    desktops_of,
    results,
    type_text,
)
from tests.daemon.support import GUARD_S, image_bytes, make_frame, running_daemon, wait_until


async def test_list_frame_act_and_the_result_comes_back() -> None:
    async with running_daemon([]) as daemon:
        desk, started = await attach(daemon, "desk", make_frame("f1", 320, 200))
        api = computer(daemon.channel)
        listed = await api.ListDesktops(computer_pb2.ListDesktopsRequest())
        (info,) = listed.desktops
        assert (info.desktop_id, info.owner, info.session_id) == (
            "desk",
            "anonymous",
            started.session_id,
        )
        assert info.attached
        assert info.frame_id == "f1"
        assert (info.frame_size.width, info.frame_size.height) == (320, 200)

        frame = (await api.GetFrame(computer_pb2.GetFrameRequest(desktop_id="desk"))).frame
        sent = make_frame("f1", 320, 200)
        assert frame.frame_id == "f1"
        assert frame.data == sent.data
        assert frame.source == sent.source
        assert frame.size == sent.size

        call = api.Act(act_request("desk", click("c1", 10, 20), type_text("t1", "hé")))
        step = await desk.recv()
        assert step.WhichOneof("event") == "actions"
        first, second = step.actions.actions
        assert first.click.point == geometry_pb2.Point(x=10, y=20)
        assert first.frame_id == "f1"
        assert second.type_text.text == "hé"
        await desk.observe_nowait(make_frame("f2", 320, 200), results(step.actions))
        response = await asyncio.wait_for(call, GUARD_S)
        assert [r.action_id for r in response.results] == ["c1", "t1"]
        assert all(r.status == action_pb2.ACTION_STATUS_OK for r in response.results)
        assert response.frame_id == "f2"


async def test_list_desktops_tells_the_client_and_displays_the_desktop_attached_with() -> None:
    client = agent_pb2.ClientInfo(
        os="linux", os_version="6.1", hostname="desk-7", client_version="1.2.3", backend="x11"
    )
    displays = [
        geometry_pb2.Display(
            display_id="DP-1",
            bounds=geometry_pb2.Rect(x=0, y=0, width=320, height=200),
            scale_factor=2.0,
            primary=True,
            name="main",
        ),
        geometry_pb2.Display(
            display_id="DP-2", bounds=geometry_pb2.Rect(x=320, y=0, width=320, height=200)
        ),
    ]
    async with running_daemon([]) as daemon:
        await attach(daemon, client=client, displays=displays)
        listed = await computer(daemon.channel).ListDesktops(computer_pb2.ListDesktopsRequest())
        (info,) = listed.desktops
        assert info.client == client
        # As sent, but for the scale factor the daemon reads as 1.0 when left unset.
        displays[1].scale_factor = 1.0
        assert list(info.displays) == displays


async def test_a_repeated_id_returns_its_first_result_and_never_runs_twice() -> None:
    async with running_daemon([]) as daemon:
        desk, _ = await attach(daemon)
        api = computer(daemon.channel)
        session = daemon.running.registry.list()[0]
        first = api.Act(act_request("desk", click("c1", 5, 5)))
        step = await desk.recv()
        # The same id again while the first is on the desktop: it waits for that result.
        again = api.Act(act_request("desk", click("c1", 5, 5)))
        await wait_until(lambda: session.step == 1, "the first step sent")
        await desk.observe_nowait(
            make_frame("f2", 320, 200),
            results(step.actions, action_pb2.ACTION_STATUS_REJECTED, "denied by the guard"),
        )
        one, two = await asyncio.wait_for(asyncio.gather(first, again), GUARD_S)
        for response in (one, two):
            (result,) = response.results
            assert result.status == action_pb2.ACTION_STATUS_REJECTED
            assert result.error == "denied by the guard"
        # And once more after it settled: answered at once, nothing sent to the desktop.
        three = await api.Act(act_request("desk", click("c1", 5, 5)))
        assert three.results[0].status == action_pb2.ACTION_STATUS_REJECTED
        assert session.step == 1
        # A new id alongside a known one: only the new one runs.
        mixed = api.Act(act_request("desk", click("c1", 5, 5), click("c2", 6, 6, "f2")))
        step = await desk.recv()
        (only,) = step.actions.actions
        assert only.click.point == geometry_pb2.Point(x=6, y=6)
        await desk.observe_nowait(make_frame("f3", 320, 200), results(step.actions))
        response = await asyncio.wait_for(mixed, GUARD_S)
        assert [r.status for r in response.results] == [
            action_pb2.ACTION_STATUS_REJECTED,
            action_pb2.ACTION_STATUS_OK,
        ]


async def test_coordinates_of_an_older_frame_are_mapped_onto_the_frame_shown_now() -> None:
    async with running_daemon([]) as daemon:
        desk, _ = await attach(daemon, frame=make_frame("f1", 320, 200))
        api = computer(daemon.channel)
        call = api.Act(act_request("desk", type_text("t1", "x")))
        step = await desk.recv()
        # The client now sends half-size frames of the same screen region.
        half = make_frame("f2", 160, 100)
        half.source.CopyFrom(geometry_pb2.Rect(x=0, y=0, width=320, height=200))
        await desk.observe_nowait(half, results(step.actions))
        await asyncio.wait_for(call, GUARD_S)
        call = api.Act(act_request("desk", click("c1", 100, 50, frame_id="f1")))
        step = await desk.recv()
        (sent,) = step.actions.actions
        assert sent.frame_id == "f2"
        assert sent.click.point == geometry_pb2.Point(x=50, y=25)
        await desk.observe_nowait(make_frame("f3", 320, 200), results(step.actions))
        await asyncio.wait_for(call, GUARD_S)


async def test_detach_mid_call_is_unavailable_and_the_resume_tells_the_result() -> None:
    async with running_daemon([], resume_window_s=30.0) as daemon:
        desk, started = await attach(daemon)
        api = computer(daemon.channel)
        call = api.Act(act_request("desk", click("c1", 1, 1)))
        step = await desk.recv()
        desk.call.cancel()  # the client's connection drops with the action on it
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await asyncio.wait_for(call, GUARD_S)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "results are known once its client resumes" in (caught.value.details() or "")
        listed = await api.ListDesktops(computer_pb2.ListDesktopsRequest())
        assert not listed.desktops[0].attached
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await api.Act(act_request("desk", click("c2", 1, 1)))
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE

        # The client resumes and reports what it did run; the caller asks again.
        resumed = daemon.stream()
        again = await resumed.start("", policy="computer", resume_token=started.resume_token)
        assert list(again.pending_action_ids) == [step.actions.actions[0].action_id]
        await resumed.observe_nowait(make_frame("f2", 320, 200), results(step.actions))
        session = daemon.running.registry.list()[0]
        await wait_until(
            lambda: session.state.value == "waiting_for_caller", "the resumed desktop waits"
        )
        response = await api.Act(act_request("desk", click("c1", 1, 1)))
        assert response.results[0].status == action_pb2.ACTION_STATUS_OK
        assert session.step == 1  # nothing ran twice


async def test_a_desktop_whose_session_left_is_not_found() -> None:
    async with running_daemon([], resume_window_s=0.0) as daemon:
        desk, _ = await attach(daemon)
        api = computer(daemon.channel)
        await desk.send(agent_pb2.RunSessionRequest(cancel=agent_pb2.CancelSession()))
        await wait_until(lambda: not desktops_of(daemon).all(), "the desktop left")
        for call in (
            api.GetFrame(computer_pb2.GetFrameRequest(desktop_id="desk")),
            api.Act(act_request("desk", click("c1", 1, 1))),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await call
            assert caught.value.code() == grpc.StatusCode.NOT_FOUND
        assert not (await api.ListDesktops(computer_pb2.ListDesktopsRequest())).desktops


async def test_the_step_limit_rolls_over_and_the_same_owner_keeps_the_ids() -> None:
    async with running_daemon([], max_steps=1) as daemon:
        desk, _ = await attach(daemon)
        api = computer(daemon.channel)
        call = api.Act(act_request("desk", click("c1", 2, 2)))
        step = await desk.recv()
        ended = await desk.observe(make_frame("f2", 320, 200), results(step.actions))
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_STEP_LIMIT
        response = await asyncio.wait_for(call, GUARD_S)
        assert response.results[0].status == action_pb2.ACTION_STATUS_OK
        await wait_until(lambda: not desktops_of(daemon).all(), "the first session left")
        # `holodesk attach` opens a new session under the same name: ids are remembered.
        _, second = await attach(daemon, frame=make_frame("g1", 320, 200))
        repeat = await api.Act(act_request("desk", click("c1", 2, 2)))
        assert repeat.results[0].status == action_pb2.ACTION_STATUS_OK
        assert daemon.running.registry.get(second.session_id).step == 0


async def test_an_idle_desktop_sends_a_fresh_frame_each_heartbeat() -> None:
    # --step-timeout-s 0.4: an idle desktop's step ends after 0.2 s with an empty batch.
    async with running_daemon([], step_timeout_s=0.4) as daemon:
        desk, _ = await attach(daemon)
        for frame_id in ("f2", "f3"):
            idle = await desk.recv()
            assert idle.WhichOneof("event") == "actions"
            assert not idle.actions.actions
            await desk.observe_nowait(make_frame(frame_id, 320, 200))
        desktops = desktops_of(daemon)
        await wait_until(lambda: desktops.get("desk").latest.frame_id == "f3")  # type: ignore[union-attr]
        assert daemon.running.registry.list()[0].ended is None


async def test_get_frame_with_refresh_asks_the_client_for_a_new_capture() -> None:
    async with running_daemon([]) as daemon:
        desk, _ = await attach(daemon)
        api = computer(daemon.channel)
        refreshed = api.GetFrame(computer_pb2.GetFrameRequest(desktop_id="desk", refresh=True))
        step = await desk.recv()
        assert not step.actions.actions
        await desk.observe_nowait(make_frame("f2", 320, 200))
        response = await asyncio.wait_for(refreshed, GUARD_S)
        assert response.frame.frame_id == "f2"
        plain = await api.GetFrame(computer_pb2.GetFrameRequest(desktop_id="desk"))
        assert plain.frame.frame_id == "f2"


def captured(frame: frame_pb2.Frame, seconds: int, nanos: int) -> frame_pb2.Frame:
    frame.captured_at.CopyFrom(timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos))
    return frame


def delta_on(
    like: frame_pb2.Frame, frame_id: str, base_frame_id: str, *, patched: bool
) -> frame_pb2.Frame:
    """A delta frame with `like`'s geometry on the frame `base_frame_id`: unchanged, or
    with one patch painted on."""
    delta = frame_pb2.Frame()
    delta.CopyFrom(like)
    delta.frame_id, delta.base_frame_id = frame_id, base_frame_id
    delta.ClearField("encoding")
    delta.ClearField("data")
    delta.ClearField("captured_at")
    if patched:
        delta.patches.add(
            rect=geometry_pb2.Rect(x=8, y=8, width=16, height=16),
            encoding=frame_pb2.IMAGE_ENCODING_PNG,
            data=image_bytes(16, 16),
        )
    return delta


async def test_get_frame_tells_when_the_client_captured_the_frame() -> None:
    async with running_daemon([]) as daemon:
        first = captured(make_frame("f1", 320, 200), 1_780_000_000, 123_456_789)
        desk, _ = await attach(daemon, frame=first)
        api = computer(daemon.channel)
        got = (await api.GetFrame(computer_pb2.GetFrameRequest(desktop_id="desk"))).frame
        assert got.captured_at == first.captured_at

        # Delta frames (the rebuilt screen is the delta's, captured when it was): an
        # unchanged screen, then a changed one, then a full frame with no time at all.
        for sent in (
            captured(delta_on(first, "f2", "f1", patched=False), 1_780_000_001, 5),
            captured(delta_on(first, "f3", "f2", patched=True), 1_780_000_002, 999_999_999),
            make_frame("f4", 320, 200),
        ):
            call = api.GetFrame(computer_pb2.GetFrameRequest(desktop_id="desk", refresh=True))
            refresh = await desk.recv()
            assert not refresh.actions.actions
            await desk.observe_nowait(sent)
            got = (await asyncio.wait_for(call, GUARD_S)).frame
            assert got.frame_id == sent.frame_id
            assert got.HasField("captured_at") == sent.HasField("captured_at")
            assert got.captured_at == sent.captured_at


async def test_a_point_off_what_the_client_captures_now_is_refused_and_not_sent() -> None:
    async with running_daemon([]) as daemon:
        desk, _ = await attach(daemon, frame=make_frame("f1", 320, 200))
        api = computer(daemon.channel)
        call = api.Act(act_request("desk", type_text("t1", "x")))
        step = await desk.recv()
        # The client now captures the display to the right of the first one.
        right = make_frame("f2", 320, 200)
        right.source.CopyFrom(geometry_pb2.Rect(x=320, y=0, width=320, height=200))
        await desk.observe_nowait(right, results(step.actions))
        await asyncio.wait_for(call, GUARD_S)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await api.Act(act_request("desk", click("c1", 10, 10, frame_id="f1")))
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "outside what the desktop's client captures now" in (caught.value.details() or "")
        session = daemon.running.registry.list()[0]
        assert session.step == 1
        # Its id was never taken: the same id on a point of the new frame runs.
        call = api.Act(act_request("desk", click("c1", 10, 10, frame_id="f2")))
        step = await desk.recv()
        assert step.actions.actions[0].click.point == geometry_pb2.Point(x=10, y=10)
        await desk.observe_nowait(make_frame("f3", 320, 200), results(step.actions))
        assert (await asyncio.wait_for(call, GUARD_S)).results[0].status == (
            action_pb2.ACTION_STATUS_OK
        )


async def test_reflection_and_health_know_the_computer_service() -> None:
    async with running_daemon([]) as daemon:
        reflect = reflection_pb2_grpc.ServerReflectionStub(daemon.channel).ServerReflectionInfo()
        await reflect.write(reflection_pb2.ServerReflectionRequest(list_services=""))
        listed = await asyncio.wait_for(reflect.read(), GUARD_S)
        names = {s.name for s in listed.list_services_response.service}
        assert "holodesk.v1.ComputerService" in names
        reflect.cancel()
        health = health_pb2_grpc.HealthStub(daemon.channel)
        status = await health.Check(
            health_pb2.HealthCheckRequest(service="holodesk.v1.ComputerService")
        )
        assert status.status == health_pb2.HealthCheckResponse.SERVING
