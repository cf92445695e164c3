"""Shared pieces of the ComputerService tests: a desktop attached through a raw
RunSession stream (the test plays the holodesk client, reporting results it chooses;
tests/e2e/test_computer_api.py runs the real `holodesk attach` instead)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc

from holodesk.daemon.policies.computer import ComputerPolicy
from holodesk.daemon.session.attached_desktops import AttachedDesktops
from holodesk.proto.v1 import (
    action_pb2,
    agent_pb2,
    computer_pb2,
    computer_pb2_grpc,
    frame_pb2,
    geometry_pb2,
)
from tests.daemon.support import Daemon, Stream, make_frame, wait_until


def desktops_of(daemon: Daemon) -> AttachedDesktops:
    (policy,) = [p for p in daemon.running.catalog.policies if isinstance(p, ComputerPolicy)]
    return policy.desktops


def computer(channel: grpc.aio.Channel) -> computer_pb2_grpc.ComputerServiceStub:
    return computer_pb2_grpc.ComputerServiceStub(channel)


async def attach(
    daemon: Daemon,
    name: str = "desk",
    frame: frame_pb2.Frame | None = None,
    *,
    channel: grpc.aio.Channel | None = None,
    metadata: Sequence[tuple[str, str]] | None = None,
    **start: Any,
) -> tuple[Stream, agent_pb2.SessionStarted]:
    """A desktop attached under `name` that has sent its first frame; `start`: more
    SessionStart fields (client, displays)."""
    stream = Stream(channel or daemon.channel, metadata=metadata)
    started = await stream.start(name, policy="computer", **start)
    await stream.observe_nowait(frame or make_frame("f1", 320, 200))
    desktops = desktops_of(daemon)
    await wait_until(
        lambda: any(d.name == name and d.latest is not None for d in desktops.all()),
        f"desktop {name} attached",
    )
    return stream, started


def click(action_id: str, x: float, y: float, frame_id: str = "f1") -> action_pb2.Action:
    return action_pb2.Action(
        action_id=action_id,
        frame_id=frame_id,
        click=action_pb2.ClickAction(point=geometry_pb2.Point(x=x, y=y)),
    )


def type_text(action_id: str, text: str) -> action_pb2.Action:
    return action_pb2.Action(action_id=action_id, type_text=action_pb2.TypeTextAction(text=text))


def act_request(
    desktop: str, *actions: action_pb2.Action, include_frame: bool = False
) -> computer_pb2.ActRequest:
    return computer_pb2.ActRequest(
        desktop_id=desktop, actions=list(actions), include_frame=include_frame
    )


def results(
    actions: agent_pb2.Actions, status: int = action_pb2.ACTION_STATUS_OK, error: str = ""
) -> list[action_pb2.ActionResult]:
    return [
        action_pb2.ActionResult(action_id=a.action_id, status=status, error=error)  # type: ignore[arg-type]
        for a in actions.actions
    ]
