"""`holodesk attach` in process: its loop opens a new session under the same name when
the daemon's step limit ends one (the daemon keeps the desktop's ids across them), and
its command line refuses what cannot be a desktop name. The desktop is the real X11
backend on the session's Xvfb, the daemon a real one on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from holodesk.client import cli
from holodesk.client.attach.command import attach
from holodesk.client.exit_codes import ExitCode
from holodesk.client.safety.settings import SafetySettings
from holodesk.client.session import SessionOptions
from holodesk.platform.select import open_backend
from holodesk.proto.limits import ID_CHARS
from holodesk.proto.v1 import action_pb2, computer_pb2, computer_pb2_grpc
from tests.daemon.support import GUARD_S, running_daemon

pytestmark = pytest.mark.x11


async def test_attach_comes_back_under_its_name_after_the_step_limit(xvfb: str) -> None:
    backend = open_backend("x11", display=xvfb)
    # No hotkey or corner: this test is about the session loop, not the guard.
    options = SessionOptions(safety=SafetySettings(emergency_stop=None, fail_safe=False))
    try:
        async with running_daemon([], max_steps=1) as daemon:
            api = computer_pb2_grpc.ComputerServiceStub(daemon.channel)
            task = asyncio.create_task(
                attach(daemon.running.address, "loop-desk", backend, options)
            )
            sessions: list[str] = []

            async def listed_session() -> str:
                while True:
                    response = await api.ListDesktops(computer_pb2.ListDesktopsRequest())
                    found = [d for d in response.desktops if d.frame_id]
                    if found and found[0].session_id not in sessions:
                        return str(found[0].session_id)
                    await asyncio.sleep(0.05)

            wait = action_pb2.Action(action_id="w1", wait=action_pb2.WaitAction(duration_ms=1))
            for _ in range(2):
                sessions.append(await asyncio.wait_for(listed_session(), GUARD_S))
                response = await api.Act(
                    computer_pb2.ActRequest(desktop_id="loop-desk", actions=[wait])
                )
                assert response.results[0].status == action_pb2.ACTION_STATUS_OK
            # Two sessions, one name, and the id ran once: in the first.
            assert len(set(sessions)) == 2
            assert daemon.running.registry.get(sessions[1]).step == 0
            assert not task.done()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(task, GUARD_S)
    finally:
        backend.close()


@pytest.mark.parametrize(
    ("name", "message"),
    [(" ", "the desktop's name is empty"), ("n" * (ID_CHARS + 1), "longer than 128")],
)
def test_a_name_that_cannot_be_a_desktop_id_is_a_usage_error(
    name: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["attach", "--server", "127.0.0.1:1", "--name", name])
    assert code == ExitCode.USAGE
    assert message in capsys.readouterr().err
