"""`holodesk attach` in process: its loop opens a new session under the same name when
the daemon's step limit ends one (the daemon keeps the desktop's ids across them), its
recording (--record) holds the steps its callers asked for and not its idle refreshes
and replays, and its command line refuses what cannot be a desktop name. The desktop
is the real X11 backend on the session's Xvfb, the daemon a real one on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from holodesk.client import cli
from holodesk.client.attach.command import attach
from holodesk.client.exit_codes import ExitCode
from holodesk.client.replay.runner import Replayer, ReplaySettings
from holodesk.client.safety.settings import SafetySettings
from holodesk.client.session import SessionOptions
from holodesk.data.format import ActionsEvent, FrameEvent, ObservationEvent
from holodesk.data.reader import Recording
from holodesk.data.stepview import LoadedRecording
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


async def test_attach_records_the_steps_callers_asked_for_and_not_its_refreshes(
    xvfb: str, tmp_path: Path
) -> None:
    backend = open_backend("x11", display=xvfb)
    options = SessionOptions(
        safety=SafetySettings(emergency_stop=None, fail_safe=False), record_dir=tmp_path
    )
    try:
        # --step-timeout-s 0.4: the idle desktop refreshes its frame every 0.2 s.
        async with running_daemon([], step_timeout_s=0.4) as daemon:
            api = computer_pb2_grpc.ComputerServiceStub(daemon.channel)
            task = asyncio.create_task(attach(daemon.running.address, "rec-desk", backend, options))
            seen: list[str] = []

            async def new_frames(count: int) -> None:
                """Until the desktop has shown `count` frames more than so far."""
                goal = len(seen) + count
                while len(seen) < goal:
                    response = await api.ListDesktops(computer_pb2.ListDesktopsRequest())
                    shown = [d.frame_id for d in response.desktops if d.frame_id]
                    if shown and shown[0] not in seen:
                        seen.append(shown[0])
                    await asyncio.sleep(0.02)

            await asyncio.wait_for(new_frames(3), GUARD_S)  # the first and two refreshes
            request = computer_pb2.GetFrameRequest(desktop_id="rec-desk", refresh=True)
            await api.GetFrame(request)
            wait = action_pb2.Action(action_id="w1", wait=action_pb2.WaitAction(duration_ms=1))
            response = await api.Act(computer_pb2.ActRequest(desktop_id="rec-desk", actions=[wait]))
            assert response.results[0].status == action_pb2.ACTION_STATUS_OK
            await asyncio.wait_for(new_frames(2), GUARD_S)  # refreshes after the step
            task.cancel()
            outcome = await asyncio.wait_for(task, GUARD_S)
        assert outcome.recording

        recording = Recording.open(outcome.recording)
        events = list(recording.events())
        # The one step a caller asked for, with its result; every frame, refreshes too.
        actions = [e for e in events if isinstance(e, ActionsEvent)]
        assert [(e.step, len(e.message["actions"])) for e in actions] == [(1, 1)]
        observations = [e for e in events if isinstance(e, ObservationEvent)]
        assert [(e.step, e.results[0]["status"]) for e in observations] == [(1, "ACTION_STATUS_OK")]
        assert len([e for e in events if isinstance(e, FrameEvent)]) >= 6
        # ...and holodesk replay runs it on the same desktop.
        loaded = LoadedRecording.load(outcome.recording)
        result = Replayer(loaded, backend, ReplaySettings(settle_s=1.0)).run()
        assert result.ok, result.steps
        assert [(s.step, s.executed) for s in result.steps] == [(0, 0), (1, 1)]
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
