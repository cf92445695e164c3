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
from holodesk.data.format import ActionsEvent, FrameEvent, ObservationEvent
from holodesk.data.reader import Recording
from holodesk.data.stepview import LoadedRecording
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


async def test_a_refresh_is_recorded_as_the_frame_it_brings_not_as_a_step(
    daemon: Daemon, backend: fake.FakeBackend, tmp_path: Path
) -> None:
    # As an attached desktop's session goes: a refresh before any step (step 0), a
    # step, two refreshes (they repeat its number), then a last step.
    step_one = agent_pb2.Actions(step=1, actions=[type_text("a1", "x")], thought="type")
    step_two = agent_pb2.Actions(step=2, actions=[done("a2", "typed")])

    async def script(conv: Conversation) -> None:
        await conv.open(DEFAULT_SPEC)
        for message in (agent_pb2.Actions(step=0), step_one, *[agent_pb2.Actions(step=1)] * 2):
            await conv.send(agent_pb2.RunSessionResponse(actions=message))
            await conv.recv_observation()
        await conv.send(agent_pb2.RunSessionResponse(actions=step_two))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="typed")

    server = daemon(script)
    options = SessionOptions(safety=OPTIONS.safety, record_dir=tmp_path)
    outcome = await run_session(server.target, "desk", backend, options)
    assert outcome.outcome is Outcome.SUCCEEDED
    sent = [
        m.observation.frame.frame_id
        for m in server.conversation.received
        if m.WhichOneof("event") == "observation" and m.observation.HasField("frame")
    ]
    assert len(sent) == 5  # the first frame, one per refresh, one after step 1

    recording = Recording.open(outcome.recording)
    events = list(recording.events())
    # Every frame sent is recorded, in order; only the two steps have actions and results.
    assert [e.frame_id for e in events if isinstance(e, FrameEvent)] == sent
    assert [e.step for e in events if isinstance(e, ActionsEvent)] == [1, 2]
    assert [e.step for e in events if isinstance(e, ObservationEvent)] == [1, 2]
    steps = recording.steps()
    assert [s.step for s in steps] == [1, 2]
    first, second = steps
    assert first.actions is not None
    assert second.actions is not None
    assert first.actions.message == json_format.MessageToDict(
        step_one, preserving_proto_field_name=True
    )
    assert first.observation is not None
    assert [r["action_id"] for r in first.observation.results] == ["a1"]
    # Each step names the frame it was decided on: the newest, after the refreshes.
    assert first.actions.frame_id == sent[1]
    assert second.actions.frame_id == sent[4]
    loaded = LoadedRecording.load(outcome.recording)
    views = loaded.steps()
    assert [v.step for v in views] == [1, 2]
    assert views[0].next_frame is not None
    assert views[0].next_frame.frame_id == sent[2]  # the screen step 1 led to


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


async def test_a_last_step_that_sent_no_actions_keeps_its_generation(
    daemon: Daemon, backend: fake.FakeBackend, tmp_path: Path
) -> None:
    """A model step with only a done ends the session at once: its generation (tokens,
    logprobs, policy version, prompt ids) comes in SessionEnded, and the client's
    recording keeps it as that step's unsent actions event, as the daemon's does."""
    generation = agent_pb2.Generation(
        completions=[
            agent_pb2.Completion(
                text='{"action": "answer"}',
                token_ids=[5, 6, 7],
                token_logprobs=[-0.5, -0.25, -0.125],
                cumulative_logprob=-0.875,
                parsed=True,
                versions=[
                    agent_pb2.VersionSpan(version=3, start=0, end=1),
                    agent_pb2.VersionSpan(version=4, start=1, end=3),
                ],
            )
        ],
        policy_version=4,
        policy_label="step-40",
        prompt_token_ids=[1, 2, 3, 4],
    )

    async def script(conv: Conversation) -> None:
        frame = await conv.open(DEFAULT_SPEC)
        await conv.send(
            agent_pb2.RunSessionResponse(
                actions=agent_pb2.Actions(step=1, actions=[click("a1", frame.frame_id, 5, 5)])
            )
        )
        await conv.recv_observation()
        ended = agent_pb2.SessionEnded(
            outcome=agent_pb2.SESSION_OUTCOME_SUCCEEDED,
            answer="ok",
            steps=2,
            generation=generation,
        )
        await conv.send(agent_pb2.RunSessionResponse(ended=ended))

    server = daemon(script)
    options = SessionOptions(safety=OPTIONS.safety, record_dir=tmp_path)
    outcome = await run_session(server.target, "answer", backend, options)
    assert outcome.outcome is Outcome.SUCCEEDED

    steps = Recording.open(outcome.recording).steps()
    assert [s.step for s in steps] == [1, 2]
    last = steps[-1].actions
    assert last is not None
    assert last.message["sent"] is False
    assert last.message["generation"] == json_format.MessageToDict(
        generation, preserving_proto_field_name=True
    )
    # It was decided on the frame sent after step 1's results.
    assert steps[-1].frame is not None
    assert last.frame_id == steps[-1].frame.frame_id
