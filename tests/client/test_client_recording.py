"""The client's own recording (`holodesk run --record DIR`, the tray's reports): a
real session against a scripted daemon on 127.0.0.1, read back with the recording
reader, delta frames rebuilt into whole images."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

from google.protobuf import json_format
from PIL import Image

from holodesk.client.events import Outcome
from holodesk.client.safety.settings import SafetySettings
from holodesk.client.session import SessionOptions, run_session
from holodesk.client.tray.reports import report_for
from holodesk.data.reader import Recording
from holodesk.platform.backends import fake
from holodesk.proto.v1 import agent_pb2, frame_pb2

from .scripted import DEFAULT_SPEC, Conversation, Script, ScriptedDaemon, click, done, type_text

Daemon = Callable[[Script], ScriptedDaemon]
OPTIONS = SessionOptions(safety=SafetySettings(emergency_stop=None, fail_safe=False))


def _script(spec: frame_pb2.FrameSpec, sent: list[agent_pb2.Actions]) -> Script:
    async def script(conv: Conversation) -> None:
        frame = await conv.open(spec)
        for message in (
            agent_pb2.Actions(
                step=1,
                actions=[click("a1", frame.frame_id, 320, 200), type_text("a2", "héllo")],
                thought="click, then type",
            ),
            agent_pb2.Actions(step=2, actions=[done("a3", "typed")]),
        ):
            sent.append(message)
            await conv.send(agent_pb2.RunSessionResponse(actions=message))
            await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="typed")

    return script


async def test_the_client_records_what_it_sent_and_received(
    daemon: Daemon, backend: fake.FakeBackend, tmp_path: Path
) -> None:
    sent: list[agent_pb2.Actions] = []
    server = daemon(_script(DEFAULT_SPEC, sent))
    options = SessionOptions(safety=OPTIONS.safety, record_dir=tmp_path)
    outcome = await run_session(server.target, "greet", backend, options)
    assert outcome.outcome is Outcome.SUCCEEDED

    recording = Recording.open(outcome.recording)
    assert recording.path.parent == tmp_path
    manifest = recording.manifest
    assert (manifest.task, manifest.session_id, manifest.policy) == ("greet", "s-1", "scripted")
    assert manifest.client.backend == "fake"
    assert recording.outcome == "succeeded"
    steps = recording.steps()
    assert [s.step for s in steps] == [1, 2]
    for step, message in zip(steps, sent, strict=True):
        assert step.actions is not None
        expected = json_format.MessageToDict(message, preserving_proto_field_name=True)
        assert step.actions.message == expected
        assert step.frame is not None
        assert step.actions.frame_id == step.frame.frame_id
        with Image.open(io.BytesIO(recording.frame_bytes(step.frame))) as image:
            assert image.size == (step.frame.width, step.frame.height)
    first = steps[0].observation
    assert first is not None
    assert [r["status"] for r in first.results] == ["ACTION_STATUS_OK", "ACTION_STATUS_OK"]
    # What the daemon got is what was recorded: the frames it decided on, in order.
    frames = [
        m.observation.frame.frame_id
        for m in server.conversation.received
        if m.WhichOneof("event") == "observation" and m.observation.HasField("frame")
    ]
    assert [s.frame.frame_id for s in steps if s.frame] == frames

    report = report_for("greet", outcome)
    assert report is not None
    assert "greet" in report.read_text()


async def test_delta_frames_are_recorded_as_whole_images(
    daemon: Daemon, backend: fake.FakeBackend, tmp_path: Path
) -> None:
    spec = frame_pb2.FrameSpec()
    spec.CopyFrom(DEFAULT_SPEC)
    spec.accept_deltas = True
    server = daemon(_script(spec, []))
    options = SessionOptions(safety=OPTIONS.safety, record_dir=tmp_path)
    outcome = await run_session(server.target, "greet", backend, options)
    assert outcome.outcome is Outcome.SUCCEEDED
    # The fake screen never changes: every frame after the first went as a delta...
    observations = [
        m.observation.frame
        for m in server.conversation.received
        if m.WhichOneof("event") == "observation" and m.observation.HasField("frame")
    ]
    assert observations[1].base_frame_id == observations[0].frame_id
    assert not observations[1].data
    # ...and the recording holds whole images, pixel for pixel the first one.
    recording = Recording.open(outcome.recording)
    first, second = (recording.frame_bytes(s.frame) for s in recording.steps() if s.frame)
    with Image.open(io.BytesIO(first)) as a, Image.open(io.BytesIO(second)) as b:
        assert a.size == b.size
        assert a.convert("RGB").tobytes() == b.convert("RGB").tobytes()


async def test_an_unwritable_record_dir_never_stops_the_agent(
    daemon: Daemon, backend: fake.FakeBackend, tmp_path: Path
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    server = daemon(_script(DEFAULT_SPEC, []))
    options = SessionOptions(safety=OPTIONS.safety, record_dir=blocked / "recordings")
    outcome = await run_session(server.target, "greet", backend, options)
    assert outcome.outcome is Outcome.SUCCEEDED
    assert outcome.recording == ""
