"""The computer API end to end: a real daemon on 127.0.0.1, a real `holodesk attach`
on Xvfb with the Tk probe app, driven from a Python gRPC client through
ComputerService. Every assertion about the desktop reads what the probe received
from the X server; refusals come from the client's own safety guard."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import grpc
import pytest
from PIL import Image

from holodesk.proto.v1 import (
    action_pb2,
    computer_pb2,
    computer_pb2_grpc,
    control_pb2,
    control_pb2_grpc,
)
from tests.daemon.support import GUARD_S, running_daemon
from tests.support.probe import ProbeApp

from .computer_api_support import attached, click_at, new_id, poll, status_name, wait_listed

pytestmark = [pytest.mark.x11, pytest.mark.e2e]


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    value = hex_colour.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


async def test_an_agent_drives_an_attached_desktop_through_the_computer_api(
    xvfb: str, probe: ProbeApp, tmp_path: Path
) -> None:
    errlog = tmp_path / "attach.log"
    async with (
        running_daemon([]) as daemon,
        attached(daemon.running.address, xvfb, "probe-desk", errlog) as process,
    ):
        api = computer_pb2_grpc.ComputerServiceStub(daemon.channel)
        info = await wait_listed(api, "probe-desk", errlog)
        assert info.attached
        assert info.client.backend == "x11"
        assert [(d.bounds.width, d.bounds.height) for d in info.displays] == [(1280, 800)]

        # The frame is the real screen, with its coordinate frame.
        got = await api.GetFrame(computer_pb2.GetFrameRequest(desktop_id="probe-desk"))
        frame = got.frame
        image = Image.open(io.BytesIO(frame.data)).convert("RGB")
        assert image.size == (frame.size.width, frame.size.height)
        assert (frame.source.width, frame.source.height) == (1280, 800)
        sx, sy = probe.widgets["swatch"].center
        point = click_at(frame, sx, sy).click.point
        assert image.getpixel((round(point.x), round(point.y))) == _rgb(probe.colors["swatch"])

        # A click on OK reaches the app, and its result comes back.
        ok_id = new_id()
        ok_x, ok_y = probe.widgets["ok"].center
        response = await api.Act(
            computer_pb2.ActRequest(
                desktop_id="probe-desk",
                actions=[click_at(frame, ok_x, ok_y, ok_id)],
                include_frame=True,
            )
        )
        assert [status_name(r.status) for r in response.results] == ["ACTION_STATUS_OK"]
        assert response.frame.frame_id == response.frame_id != frame.frame_id
        # Later frames travel as deltas; the API hands out each as one whole image.
        later = Image.open(io.BytesIO(response.frame.data)).convert("RGB")
        assert later.size == image.size
        assert later.getpixel((round(point.x), round(point.y))) == _rgb(probe.colors["swatch"])
        await asyncio.to_thread(probe.wait_for_event, "command", GUARD_S, widget="ok")

        # Text into the entry, any Unicode.
        ex, ey = probe.widgets["entry"].center
        text = action_pb2.Action(
            action_id=new_id(), type_text=action_pb2.TypeTextAction(text="héllo 日本")
        )
        response = await api.Act(
            computer_pb2.ActRequest(
                desktop_id="probe-desk", actions=[click_at(response.frame, ex, ey), text]
            )
        )
        assert [status_name(r.status) for r in response.results] == ["ACTION_STATUS_OK"] * 2
        await asyncio.to_thread(probe.wait_for_entry, "héllo 日本", GUARD_S)

        # The client's guard refuses a denied chord; what follows it is skipped.
        denied = action_pb2.Action(
            action_id=new_id(),
            key_chord=action_pb2.KeyChordAction(keys=["ctrl", "alt", "delete"]),
        )
        after = action_pb2.Action(
            action_id=new_id(), type_text=action_pb2.TypeTextAction(text="never")
        )
        response = await api.Act(
            computer_pb2.ActRequest(desktop_id="probe-desk", actions=[denied, after])
        )
        assert [status_name(r.status) for r in response.results] == [
            "ACTION_STATUS_REJECTED",
            "ACTION_STATUS_SKIPPED",
        ]
        assert "ctrl+alt+delete" in response.results[0].error

        # The OK click again under its id: its first result, and no second click.
        again = await api.Act(
            computer_pb2.ActRequest(
                desktop_id="probe-desk", actions=[click_at(frame, ok_x, ok_y, ok_id)]
            )
        )
        assert status_name(again.results[0].status) == "ACTION_STATUS_OK"
        marker = action_pb2.Action(
            action_id=new_id(), type_text=action_pb2.TypeTextAction(text="!")
        )
        await api.Act(computer_pb2.ActRequest(desktop_id="probe-desk", actions=[marker]))
        await asyncio.to_thread(probe.wait_for_entry, "héllo 日本!", GUARD_S)
        assert len(probe.events("command")) == 1
        assert not [e for e in probe.events("key") if e.get("keysym") == "Delete"]

        # SIGTERM detaches it for good: the desktop leaves the list.
        process.terminate()
        assert await asyncio.wait_for(process.wait(), GUARD_S) == 3, errlog.read_text()

        async def gone() -> bool:
            listed = await api.ListDesktops(computer_pb2.ListDesktopsRequest())
            return not listed.desktops

        await poll(gone, "the desktop left", errlog)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await api.GetFrame(computer_pb2.GetFrameRequest(desktop_id="probe-desk"))
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND


async def test_an_idle_attached_desktop_keeps_its_steps_and_waits_for_its_caller(
    xvfb: str, probe: ProbeApp, tmp_path: Path
) -> None:
    errlog = tmp_path / "attach.log"
    # --step-timeout-s 0.4: the idle desktop sends a fresh frame every 0.2 s; one step
    # allowed, so a heartbeat counted as a step would end its session at once.
    async with (
        running_daemon([], max_steps=1, step_timeout_s=0.4) as daemon,
        attached(daemon.running.address, xvfb, "idle-desk", errlog),
    ):
        api = computer_pb2_grpc.ComputerServiceStub(daemon.channel)
        control = control_pb2_grpc.ControlServiceStub(daemon.channel)
        info = await wait_listed(api, "idle-desk", errlog)
        seen = {info.frame_id}

        async def refreshed_three_times() -> bool:
            listed = await api.ListDesktops(computer_pb2.ListDesktopsRequest())
            seen.update(d.frame_id for d in listed.desktops)
            return len(seen) >= 4

        await poll(refreshed_three_times, "three idle refreshes", errlog)
        (session,) = (await control.ListSessions(control_pb2.ListSessionsRequest())).sessions
        assert session.session_id == info.session_id  # the same session: none ended
        assert session.step == 0
        assert session.state == control_pb2.SESSION_STATE_WAITING_FOR_CLIENT

        # The caller's batch is the one step: it runs, then the session reaches its
        # limit and `holodesk attach` opens the next one under the same name.
        ok_x, ok_y = probe.widgets["ok"].center
        frame = (await api.GetFrame(computer_pb2.GetFrameRequest(desktop_id="idle-desk"))).frame
        response = await api.Act(
            computer_pb2.ActRequest(
                desktop_id="idle-desk", actions=[click_at(frame, ok_x, ok_y, new_id())]
            )
        )
        assert [status_name(r.status) for r in response.results] == ["ACTION_STATUS_OK"]
        await asyncio.to_thread(probe.wait_for_event, "command", GUARD_S, widget="ok")

        async def rolled_over() -> bool:
            listed = await api.ListDesktops(computer_pb2.ListDesktopsRequest())
            return any(d.session_id not in ("", info.session_id) for d in listed.desktops)

        await poll(rolled_over, "the next session of the desktop", errlog)
