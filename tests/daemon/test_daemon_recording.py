"""Session recordings made by a real daemon (grpc.aio on 127.0.0.1, the scripted model
policy, raw RunSession clients), read back with holodesk.data's reader; ReportReward;
and a real holodeskd draining its recordings on SIGTERM."""

from __future__ import annotations

import asyncio
import io
import json
import signal
import sys
from collections.abc import Awaitable
from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format
from PIL import Image

from holodesk.daemon.cli import build_parser, config_from_args
from holodesk.daemon.session.recorder import default_record_dir
from holodesk.data.format import ActionsEvent, EndEvent, FrameEvent, ImagePart, RewardEvent
from holodesk.data.reader import Recording, list_recordings
from holodesk.proto.v1 import action_pb2, agent_pb2, frame_pb2, geometry_pb2
from tests.daemon.support import (
    GUARD_S,
    Daemon,
    Stream,
    holo,
    make_frame,
    ok_results,
    running_daemon,
    scripted_policy,
    spawn_holodeskd,
    wait_serving,
    wait_until,
    write_tokens,
)

CLICK = holo({"action": "click", "x": 500, "y": 500})
ASK = holo({"action": "ask_user", "question": "which file?"}, thought="need a name")
WRITE = holo({"action": "write_element_abs", "content": "notes.txt", "x": 100, "y": 900})
ANSWER = holo({"action": "answer", "content": "saved"}, thought="all done")
ON = agent_pb2.RECORDING_MODE_ON
OFF = agent_pb2.RECORDING_MODE_OFF


def recording_of(root: Path, started: agent_pb2.SessionStarted) -> Recording:
    assert started.recording_id, "the session is not recorded"
    return Recording.open(root / started.recording_id)


def display() -> geometry_pb2.Display:
    return geometry_pb2.Display(
        display_id=":0",
        bounds=geometry_pb2.Rect(x=0, y=0, width=1280, height=720),
        scale_factor=1.0,
        primary=True,
    )


async def test_a_recorded_session_reads_back_exactly(tmp_path: Path) -> None:
    """Four steps (click, ask_user answered by the human, write, answer): the reader
    gives back the frames' bytes, the Actions messages as sent, the results as
    reported, the prompts with their images named by frame, and the outcome."""
    policy = scripted_policy([CLICK, ASK, WRITE, ANSWER])
    frames = [
        make_frame("f1", 640, 360),
        make_frame("f2", 640, 360, fmt="JPEG"),
        make_frame("f3", 320, 200),
        make_frame("f4", 320, 200),
    ]
    async with running_daemon([policy], record=True, record_dir=str(tmp_path)) as daemon:
        stream = daemon.stream()
        client = agent_pb2.ClientInfo(os="linux", hostname="desk", backend="x11")
        started = await stream.start(
            "save the notes",
            client=client,
            displays=[display()],
            sampling=agent_pb2.SamplingParams(temperature=0.5, seed=7),
        )
        assert started.recording_id.endswith("-" + started.session_id)
        sent: list[agent_pb2.Actions] = []
        results: list[list[action_pb2.ActionResult]] = [[]]
        reply = await stream.observe(frames[0])
        for index, frame in enumerate(frames[1:], start=1):
            sent.append(reply.actions)
            results.append(ok_results(reply.actions))
            user_reply = "notes.txt" if index == 2 else ""
            reply = await stream.observe(frame, results[-1], user_reply=user_reply)
        assert reply.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
        await stream.finished_ok()

    recording = recording_of(tmp_path, started)
    manifest = recording.manifest
    assert manifest.session_id == started.session_id
    assert manifest.task == "save the notes"
    assert manifest.policy == "scripted"
    assert manifest.dialect == "holo"
    assert manifest.principal == "anonymous"
    assert (manifest.client.os, manifest.client.hostname, manifest.client.backend) == (
        "linux",
        "desk",
        "x11",
    )
    assert json_format.ParseDict(manifest.displays[0], geometry_pb2.Display()) == display()
    assert manifest.frame_spec["encoding"] == "IMAGE_ENCODING_PNG"
    assert manifest.sampling == {"temperature": 0.5, "seed": "7"}
    assert (manifest.outcome, manifest.answer, manifest.steps) == ("succeeded", "saved", 4)

    steps = recording.steps()
    assert [s.step for s in steps] == [1, 2, 3, 4]
    for step, frame in zip(steps, frames, strict=True):
        assert step.frame is not None
        assert step.frame.frame_id == frame.frame_id
        assert recording.frame_bytes(step.frame) == frame.data
        assert (step.frame.width, step.frame.height) == (frame.size.width, frame.size.height)
        assert step.frame.encoding == (
            "jpeg" if frame.encoding == frame_pb2.IMAGE_ENCODING_JPEG else "png"
        )
    for step, message in zip(steps, sent, strict=False):
        assert step.actions is not None
        assert json_format.ParseDict(step.actions.message, agent_pb2.Actions()) == message
        assert step.actions.policy_seconds > 0
    for step, reported in zip(steps, results[1:], strict=False):
        assert step.observation is not None
        parsed = [
            json_format.ParseDict(r, action_pb2.ActionResult()) for r in step.observation.results
        ]
        assert parsed == reported
    assert steps[1].observation is not None
    assert steps[1].observation.user_reply == "notes.txt"
    # The last decision (answer) was never sent as Actions, but is recorded for its output.
    final = steps[3].actions
    assert final is not None
    assert final.message["sent"] is False
    assert "actions" not in final.message
    assert steps[3].observation is None

    # The prompts: every image named by the frame of the window it was made from.
    for step in steps:
        assert step.actions is not None
        assert step.actions.prompt is not None, "the model policy's prompt is recorded"
        images = [p for m in step.actions.prompt for p in m.content if isinstance(p, ImagePart)]
        assert images[-1].frame_id == f"f{step.step}"
        expected = [f"f{n}" for n in range(1, step.step + 1)][-len(images) :]
        assert [i.frame_id for i in images] == expected
        assert all(i.width > 0 and i.height > 0 for i in images)
    if sent[0].HasField("generation"):  # a model policy's output, as generated
        first = steps[0].actions
        assert first is not None
        assert '"click"' in first.message["generation"]["completions"][0]["text"]

    end = recording.end
    assert isinstance(end, EndEvent)
    assert (end.outcome, end.answer, end.steps) == ("succeeded", "saved", 4)
    kinds = [event.type for event in recording.events()]
    assert kinds[0] == "frame"
    assert kinds[-1] == "end"


async def test_a_delta_frame_is_recorded_as_the_full_image_the_policy_saw(
    tmp_path: Path,
) -> None:
    """Frame 2 comes as a patch over frame 1: the recording holds the rebuilt screen
    (frame 1 with the patch painted in), never the patch itself."""
    base = make_frame("f1", 96, 64)
    patch_image = Image.new("RGB", (16, 8), (255, 0, 0))
    buffer = io.BytesIO()
    patch_image.save(buffer, format="PNG")
    delta = frame_pb2.Frame(
        frame_id="f2",
        size=base.size,
        base_frame_id="f1",
        source=base.source,
        scale_factor=1.0,
        patches=[
            frame_pb2.FramePatch(
                rect=geometry_pb2.Rect(x=4, y=2, width=16, height=8),
                encoding=frame_pb2.IMAGE_ENCODING_PNG,
                data=buffer.getvalue(),
            )
        ],
    )
    policy = scripted_policy([CLICK, ANSWER])
    async with running_daemon([policy], record=True, record_dir=str(tmp_path)) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        assert started.frame_spec.accept_deltas
        step1 = await stream.observe(base)
        last = await stream.observe(delta, ok_results(step1.actions))
        assert last.ended.answer == "saved"
        await stream.finished_ok()

    recording = recording_of(tmp_path, started)
    frames = recording.frame_events()
    assert set(frames) == {"f1", "f2"}
    expected = Image.open(io.BytesIO(base.data)).convert("RGB")
    expected.paste(patch_image, (4, 2))
    with Image.open(io.BytesIO(recording.frame_bytes("f2"))) as rebuilt:
        assert rebuilt.size == (96, 64)
        assert frames["f2"].encoding == (rebuilt.format or "").lower()
        assert rebuilt.convert("RGB").tobytes() == expected.tobytes()
    assert recording.frame_bytes("f2") != buffer.getvalue()


async def test_per_session_mode_against_the_daemon_default(tmp_path: Path) -> None:
    """ON/OFF in SessionStart beat the daemon's --record; UNSPECIFIED takes it."""
    for default_on, mode, recorded in [
        (False, agent_pb2.RECORDING_MODE_UNSPECIFIED, False),
        (False, ON, True),
        (False, OFF, False),
        (True, agent_pb2.RECORDING_MODE_UNSPECIFIED, True),
        (True, OFF, False),
        (True, ON, True),
    ]:
        root = tmp_path / f"{default_on}-{mode}"
        policy = scripted_policy([ANSWER])
        async with running_daemon([policy], record=default_on, record_dir=str(root)) as daemon:
            stream = daemon.stream()
            started = await stream.start(recording=mode)
            reply = await stream.observe(make_frame("f1", 64, 48))
            assert reply.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
            await stream.finished_ok()
        found = list_recordings(root) if root.exists() else []
        assert bool(started.recording_id) is recorded, (default_on, mode)
        assert [r.recording_id for r in found] == ([started.recording_id] if recorded else [])
        if recorded:
            assert found[0].outcome == "succeeded"


async def test_an_explicit_recording_that_cannot_be_made_fails_the_session(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    async with running_daemon([scripted_policy([ANSWER] * 2)], record_dir=str(blocker)) as daemon:
        stream = daemon.stream()
        await stream.start_nowait(recording=ON)
        error = await stream.error()
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "cannot record this session" in (error.details() or "")
        # Unrecorded sessions still run.
        other = daemon.stream()
        started = await other.start()
        assert started.recording_id == ""
        assert (await other.observe(make_frame("f1", 64, 48))).ended.answer == "saved"


async def test_an_unusable_record_dir_fails_the_daemon_start_when_recording_by_default(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(OSError, match="--record-dir"):
        async with running_daemon(
            [scripted_policy([ANSWER])], record=True, record_dir=str(blocker)
        ):
            pass


async def test_a_resumed_session_continues_the_same_recording(tmp_path: Path) -> None:
    policy = scripted_policy([CLICK, CLICK, ANSWER])
    async with running_daemon([policy], record=True, record_dir=str(tmp_path)) as daemon:
        first = daemon.stream()
        started = await first.start()
        step1 = await first.observe(make_frame("f1", 64, 48))
        first.call.cancel()  # the stream drops with step 1's actions unanswered
        registry = daemon.running.registry
        await wait_until(lambda: not registry.get(started.session_id).attached, "the detach")

        second = daemon.stream()
        resumed = await second.start(resume_token=started.resume_token)
        assert resumed.resumed
        assert resumed.recording_id == started.recording_id
        (action,) = step1.actions.actions
        lost = action_pb2.ActionResult(
            action_id=action.action_id, status=action_pb2.ACTION_STATUS_NOT_DELIVERED
        )
        step2 = await second.observe(make_frame("f2", 64, 48), [lost])
        last = await second.observe(make_frame("f3", 64, 48), ok_results(step2.actions))
        assert last.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
        await second.finished_ok()

    assert [r.recording_id for r in list_recordings(tmp_path)] == [started.recording_id]
    recording = recording_of(tmp_path, started)
    steps = recording.steps()
    assert [s.step for s in steps] == [1, 2, 3]
    assert [s.frame.frame_id for s in steps if s.frame is not None] == ["f1", "f2", "f3"]
    assert steps[0].observation is not None
    assert steps[0].observation.results == [
        {"action_id": action.action_id, "status": "ACTION_STATUS_NOT_DELIVERED"}
    ]
    assert recording.outcome == "succeeded"


# ReportReward ---------------------------------------------------------------------------


async def _finished_session(
    daemon: Daemon,
    metadata: list[tuple[str, str]],
    recording: agent_pb2.RecordingMode.ValueType = agent_pb2.RECORDING_MODE_UNSPECIFIED,
) -> str:
    stream = Stream(daemon.channel, metadata=metadata)
    started = await stream.start(recording=recording)
    reply = await stream.observe(make_frame("f1", 64, 48))
    assert reply.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
    await stream.finished_ok()
    await wait_until(lambda: len(daemon.running.registry) == 0, "the session to leave")
    return started.session_id


async def _code(call: Awaitable[object]) -> grpc.StatusCode:
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


async def test_report_reward_checks_the_caller_and_updates_the_recording(tmp_path: Path) -> None:
    tokens = write_tokens(tmp_path, alice="agent", bob="agent", root="admin")
    root = tmp_path / "recordings"
    policy = scripted_policy([ANSWER] * 3)
    async with running_daemon(
        [policy], record=True, record_dir=str(root), tokens_file=str(tokens.path)
    ) as daemon:
        alice, bob, admin = (tokens.metadata(n) for n in ("alice", "bob", "root"))
        recorded = await _finished_session(daemon, alice)
        unrecorded = await _finished_session(daemon, alice, recording=OFF)

        async def report(
            session_id: str,
            metadata: list[tuple[str, str]],
            *,
            reward: float | None = None,
            success: bool | None = None,
            note: str = "",
        ) -> agent_pb2.ReportRewardResponse:
            request = agent_pb2.ReportRewardRequest(
                session_id=session_id, reward=reward, success=success, note=note
            )
            response: agent_pb2.ReportRewardResponse = await daemon.agent.ReportReward(
                request, metadata=metadata
            )
            return response

        assert await _code(report(recorded, bob, reward=1.0)) == grpc.StatusCode.PERMISSION_DENIED
        assert (
            await _code(report("no-such-session", alice, reward=1.0)) == grpc.StatusCode.NOT_FOUND
        )
        assert await _code(report(recorded, alice)) == grpc.StatusCode.INVALID_ARGUMENT
        assert await _code(report(recorded, alice, reward=float("nan"))) == (
            grpc.StatusCode.INVALID_ARGUMENT
        )
        assert await _code(report("", alice, reward=1.0)) == grpc.StatusCode.INVALID_ARGUMENT

        answer = await report(recorded, alice, reward=0.25, note="checker v1")
        assert answer.recorded is True
        answer = await report(recorded, admin, success=True, note="reviewed")
        assert answer.recorded is True
        answer = await report(unrecorded, alice, reward=1.0)
        assert answer.recorded is False

    recording = Recording.open(root / next(p.name for p in root.iterdir()))
    assert recording.manifest.session_id == recorded
    assert (recording.manifest.reward, recording.manifest.success) == (0.25, True)
    assert recording.manifest.reward_note == "reviewed"
    rewards = recording.rewards
    assert [(r.reward, r.success, r.note) for r in rewards] == [
        (0.25, None, "checker v1"),
        (None, True, "reviewed"),
    ]
    events = list(recording.events())
    assert isinstance(events[-1], RewardEvent)
    assert any(isinstance(e, EndEvent) for e in events[:-2])


async def test_report_reward_while_the_session_runs(tmp_path: Path) -> None:
    policy = scripted_policy([CLICK, ANSWER])
    async with running_daemon([policy], record=True, record_dir=str(tmp_path)) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        step1 = await stream.observe(make_frame("f1", 64, 48))
        answer = await daemon.agent.ReportReward(
            agent_pb2.ReportRewardRequest(session_id=started.session_id, reward=-0.5)
        )
        assert answer.recorded
        last = await stream.observe(make_frame("f2", 64, 48), ok_results(step1.actions))
        assert last.ended.answer == "saved"
        await stream.finished_ok()
    recording = recording_of(tmp_path, started)
    kinds = [type(e) for e in recording.events()]
    # Written in order between the step it came after and the rest of the session.
    assert kinds.index(RewardEvent) > kinds.index(ActionsEvent)
    assert kinds.index(RewardEvent) < kinds.index(EndEvent)
    assert recording.manifest.reward == -0.5


async def test_report_reward_without_recordings_for_a_known_session() -> None:
    async with running_daemon([scripted_policy([ANSWER])]) as daemon:
        session_id = await _finished_session(daemon, [])
        answer = await daemon.agent.ReportReward(
            agent_pb2.ReportRewardRequest(session_id=session_id, success=False)
        )
        assert answer.recorded is False


# SIGTERM ----------------------------------------------------------------------------------


async def test_sigterm_mid_session_leaves_complete_recordings(tmp_path: Path) -> None:
    """A real holodeskd --record on, two steps done and the client about to send the
    third observation: SIGTERM drains, the recording holds both steps (frames, actions,
    results), ends `cancelled`, and every line of events.jsonl parses."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([CLICK] * 5))
    root = tmp_path / "recordings"
    process, address = await spawn_holodeskd(
        *("--policy", "scripted", "--script", str(script)),
        *("--record", "on", "--record-dir", str(root)),
    )
    frames = [make_frame("f1", 96, 64), make_frame("f2", 96, 64)]
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            await wait_serving(channel)
            stream = Stream(channel)
            started = await stream.start("keep clicking")
            step1 = await stream.observe(frames[0])
            step2 = await stream.observe(frames[1], ok_results(step1.actions))
            assert step2.actions.step == 2
            # Step 2's results are in flight when the daemon is told to stop.
            process.send_signal(signal.SIGTERM)
            error = await stream.error()
            assert error.code() == grpc.StatusCode.UNAVAILABLE
        code = await asyncio.wait_for(process.wait(), GUARD_S)
        assert process.stderr is not None
        stderr = (await process.stderr.read()).decode()
        assert code == 0, stderr
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()

    path = root / started.recording_id
    for number, text in enumerate((path / "events.jsonl").read_text().splitlines(), 1):
        assert isinstance(json.loads(text), dict), f"line {number}"
    recording = Recording.open(path)
    steps = recording.steps()
    assert [s.step for s in steps] == [1, 2]
    for step, frame, sent in zip(steps, frames, (step1, step2), strict=True):
        assert step.frame is not None
        assert recording.frame_bytes(step.frame) == frame.data
        assert step.actions is not None
        assert json_format.ParseDict(step.actions.message, agent_pb2.Actions()) == sent.actions
    assert steps[0].observation is not None
    assert steps[1].observation is None  # never reported
    assert recording.manifest.outcome == "cancelled"
    end = recording.end
    assert end is not None
    assert end.steps == 2
    assert isinstance(next(iter(recording.events())), FrameEvent)


def test_default_record_dir_follows_the_platform_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    expected = tmp_path / "holodesk" / "recordings"
    if sys.platform.startswith("linux"):
        assert default_record_dir() == expected
    assert default_record_dir().parts[-2:] == ("holodesk", "recordings")


def test_record_flags_become_the_config(tmp_path: Path) -> None:
    parser = build_parser()
    default = config_from_args(parser.parse_args([]))
    assert (default.record, default.record_dir) == (False, "")
    chosen = config_from_args(parser.parse_args(["--record", "on", "--record-dir", str(tmp_path)]))
    assert (chosen.record, chosen.record_dir) == (True, str(tmp_path))
    with pytest.raises(SystemExit):
        parser.parse_args(["--record", "sometimes"])
