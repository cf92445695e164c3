"""holodesk.data's recording format: the writer and reader on real files."""

from __future__ import annotations

import io
import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from holodesk.data.format import (
    EVENTS_FILE,
    FORMAT_VERSION,
    MANIFEST_FILE,
    ActionsEvent,
    EndEvent,
    FrameEvent,
    ImagePart,
    Manifest,
    ObservationEvent,
    OtherPart,
    RecordingError,
    RecordingFormatError,
    RewardEvent,
    TextPart,
    frame_file_name,
    make_recording_id,
)
from holodesk.data.reader import Recording, list_recordings
from holodesk.data.writer import RecordingWriter


def png(width: int, height: int, shade: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (shade, 10, 200)).save(buffer, format="PNG")
    return buffer.getvalue()


def manifest(session_id: str = "s1", *, started: datetime | None = None, **fields: Any) -> Manifest:
    started_at = started or datetime.now(UTC)
    return Manifest(
        recording_id=make_recording_id(session_id, started_at),
        session_id=session_id,
        started_at=started_at,
        task=fields.pop("task", "open the file"),
        policy=fields.pop("policy", "scripted"),
        **fields,
    )


def click_message(step: int, frame_id: str) -> dict[str, Any]:
    return {
        "step": step,
        "actions": [
            {"action_id": f"a{step}", "frame_id": frame_id, "click": {"point": {"x": 1.5, "y": 2}}}
        ],
        "thought": f"step {step}",
    }


def write_session(
    root: Path, steps: int = 3, *, end: bool = True
) -> tuple[RecordingWriter, list[bytes]]:
    writer = RecordingWriter.create(root, manifest())
    images = [png(40 + step, 30, step * 20) for step in range(1, steps + 1)]
    for step, image in enumerate(images, start=1):
        writer.write_frame(
            step,
            f"f{step}",
            image,
            encoding="png",
            width=40 + step,
            height=30,
            display_id=":0",
            source={"x": 0, "y": 0, "width": 80 + 2 * step, "height": 60},
            scale_factor=2.0,
        )
        writer.write_actions(
            step,
            click_message(step, f"f{step}"),
            frame_id=f"f{step}",
            prompt=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "the task"},
                        {"type": "image", "frame_id": f"f{step}", "width": 20, "height": 15},
                    ],
                }
            ],
            policy_seconds=0.25,
        )
        writer.write_observation(
            step, [{"action_id": f"a{step}", "status": "ACTION_STATUS_OK"}], user_reply=""
        )
    if end:
        writer.finish("succeeded", answer="42", steps=steps)
    return writer, images


def test_round_trip_gives_back_frames_actions_results_and_outcome(tmp_path: Path) -> None:
    writer, images = write_session(tmp_path)
    recording = Recording.open(writer.path)
    assert recording.manifest.format == "holodesk-recording"
    assert recording.manifest.version == FORMAT_VERSION
    assert recording.manifest.task == "open the file"
    assert recording.outcome == "succeeded"
    assert recording.manifest.answer == "42"
    assert recording.manifest.steps == 3
    assert recording.manifest.ended_at is not None
    assert recording.manifest.ended_at >= recording.manifest.started_at

    steps = recording.steps()
    assert [s.step for s in steps] == [1, 2, 3]
    for step, image in zip(steps, images, strict=True):
        assert step.frame is not None
        assert step.actions is not None
        assert step.observation is not None
        assert recording.frame_bytes(step.frame.frame_id) == image
        assert recording.frame_bytes(step.frame) == image
        assert step.frame.scale_factor == 2.0
        assert step.frame.source.width == 80 + 2 * step.step
        assert step.actions.message == click_message(step.step, f"f{step.step}")
        assert step.actions.policy_seconds == 0.25
        assert step.actions.prompt is not None
        text, picture = step.actions.prompt[0].content
        assert isinstance(text, TextPart)
        assert isinstance(picture, ImagePart)
        assert picture.frame_id == step.frame.frame_id
        assert step.observation.results == [
            {"action_id": f"a{step.step}", "status": "ACTION_STATUS_OK"}
        ]
    end = recording.end
    assert isinstance(end, EndEvent)
    assert end.steps == 3
    times = [event.t for event in recording.events()]
    assert times == sorted(times)


def test_event_lines_are_flushed_as_they_are_written(tmp_path: Path) -> None:
    """A reader opening a live recording sees every event written so far."""
    writer = RecordingWriter.create(tmp_path, manifest())
    writer.write_frame(1, "f1", png(8, 8, 1), encoding="png", width=8, height=8)
    live = Recording.open(writer.path)
    assert [type(e) for e in live.events()] == [FrameEvent]
    assert not live.ended
    assert live.outcome is None
    writer.write_actions(1, click_message(1, "f1"), frame_id="f1")
    assert [type(e) for e in live.events()] == [FrameEvent, ActionsEvent]
    writer.close()


def test_a_truncated_last_line_is_ignored(tmp_path: Path) -> None:
    writer, _ = write_session(tmp_path, steps=2, end=False)
    writer.close()
    events_path = writer.path / EVENTS_FILE
    whole = events_path.read_bytes()
    # The writer died in the middle of the next event.
    events_path.write_bytes(whole + b'{"t": 1.0, "step": 3, "type": "frame", "frame_id": "f3", "fi')
    recording = Recording.open(writer.path)
    assert [s.step for s in recording.steps()] == [1, 2]
    assert recording.end is None
    assert recording.outcome is None
    assert not recording.ended
    # A complete but garbled last line (a torn write ending in a newline) too.
    events_path.write_bytes(whole + b"\x00\x00\x00\n")
    assert len(list(Recording.open(writer.path).events())) == 6


def test_a_bad_line_in_the_middle_is_an_error_naming_it(tmp_path: Path) -> None:
    writer, _ = write_session(tmp_path, steps=2)
    events_path = writer.path / EVENTS_FILE
    lines = events_path.read_bytes().split(b"\n")
    lines[1] = b"{not json"
    events_path.write_bytes(b"\n".join(lines))
    with pytest.raises(RecordingFormatError, match=r"events.jsonl:2: not JSON"):
        list(Recording.open(writer.path).events())


def test_a_recording_that_never_ended_but_has_its_end_event(tmp_path: Path) -> None:
    """The writer died between the end event and the manifest rewrite."""
    writer, _ = write_session(tmp_path, steps=1, end=False)
    before = (writer.path / MANIFEST_FILE).read_bytes()
    writer.finish("step_limit", reason="reached the limit of 1 steps", steps=1)
    (writer.path / MANIFEST_FILE).write_bytes(before)
    recording = Recording.open(writer.path)
    assert recording.manifest.outcome is None
    assert recording.outcome == "step_limit"
    assert recording.ended


def test_a_newer_version_or_another_format_is_refused(tmp_path: Path) -> None:
    writer, _ = write_session(tmp_path, steps=1)
    path = writer.path / MANIFEST_FILE
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "version": FORMAT_VERSION + 1}))
    with pytest.raises(RecordingFormatError, match="newer than this reader"):
        Recording.open(writer.path)
    path.write_text(json.dumps({**data, "format": "something-else"}))
    with pytest.raises(RecordingFormatError, match="format is 'something-else'"):
        Recording.open(writer.path)
    path.write_text(json.dumps({**data, "version": "1"}))
    with pytest.raises(RecordingFormatError, match="positive integer"):
        Recording.open(writer.path)
    path.write_text("[]")
    with pytest.raises(RecordingFormatError, match="JSON object"):
        Recording.open(writer.path)
    with pytest.raises(RecordingError, match=r"recording\.json is missing"):
        Recording.open(tmp_path / "nothing-here")


def test_unknown_fields_and_event_types_are_ignored_and_kept(tmp_path: Path) -> None:
    """What a later writer of the same major version may add."""
    writer, _ = write_session(tmp_path, steps=1, end=False)
    path = writer.path / MANIFEST_FILE
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "gpu": "H200"}))
    with open(writer.path / EVENTS_FILE, "ab") as events:
        events.write(b'{"type": "heartbeat", "t": 9.0, "step": 1, "load": 0.5}\n')
        events.write(b'{"type": "observation", "t": 9.5, "step": 1, "results": [], "extra": 1}\n')
    recording = Recording.open(writer.path)
    kinds = [type(event) for event in recording.events()]
    assert kinds == [FrameEvent, ActionsEvent, ObservationEvent, ObservationEvent]
    assert recording.manifest.model_extra == {"gpu": "H200"}
    # A prompt part of an unknown type is kept as such.
    event = ActionsEvent.model_validate(
        {
            "t": 0,
            "step": 1,
            "message": {},
            "prompt": [{"role": "user", "content": [{"type": "audio", "seconds": 2}]}],
        }
    )
    assert event.prompt is not None
    (part,) = event.prompt[0].content
    assert isinstance(part, OtherPart)
    assert part.type == "audio"


def test_rewards_after_the_end_update_the_manifest(tmp_path: Path) -> None:
    writer, _ = write_session(tmp_path, steps=1)
    assert writer.finish("failed") is None  # already finished: nothing written
    writer.add_reward(0.75, note="checker v1")
    writer.add_reward(success=True, note="human review")
    recording = Recording.open(writer.path)
    assert recording.manifest.outcome == "succeeded"
    assert recording.manifest.reward == 0.75
    assert recording.manifest.success is True
    assert recording.manifest.reward_note == "human review"
    rewards = recording.rewards
    assert [(r.reward, r.success, r.note) for r in rewards] == [
        (0.75, None, "checker v1"),
        (None, True, "human review"),
    ]
    assert all(isinstance(r, RewardEvent) and r.step == 1 for r in rewards)
    assert not list(writer.path.glob(".*.tmp")), "no temporary file is left behind"


def test_writer_errors_are_clear(tmp_path: Path) -> None:
    writer, _ = write_session(tmp_path, steps=1, end=False)
    with pytest.raises(RecordingError, match="already exists"):
        RecordingWriter.create(tmp_path, writer.manifest)
    with pytest.raises(RecordingError, match="unknown outcome 'won'"):
        writer.finish("won")
    with pytest.raises(RecordingError, match="unknown frame encoding 'gif'"):
        writer.write_frame(2, "f2", b"GIF89a", encoding="gif", width=1, height=1)
    writer.finish("cancelled", reason="stopped")
    with pytest.raises(RecordingError, match="finished or closed"):
        writer.write_observation(2, [])


def test_frame_files_are_named_safely_and_cannot_escape(tmp_path: Path) -> None:
    assert frame_file_name(7, "../../etc/passwd", "jpeg") == "frames/000007-etc_passwd.jpg"
    assert make_recording_id("a/b c", datetime(2026, 3, 1, 12, 0, 5, tzinfo=UTC)) == (
        "20260301T120005Z-a_b_c"
    )
    writer, _ = write_session(tmp_path, steps=1)
    with open(writer.path / EVENTS_FILE, "ab") as events:
        bad = FrameEvent(
            t=1,
            step=2,
            frame_id="evil",
            file="../../outside.png",
            encoding="png",
            width=1,
            height=1,
        )
        events.write(bad.model_dump_json().encode() + b"\n")
    recording = Recording.open(writer.path)
    with pytest.raises(RecordingFormatError, match="names a file outside"):
        recording.frame_bytes("evil")
    with pytest.raises(RecordingError, match="no frame 'nope'"):
        recording.frame_bytes("nope")


def test_threads_writing_one_recording_keep_every_line_whole(tmp_path: Path) -> None:
    writer = RecordingWriter.create(tmp_path, manifest())

    def observe(worker: int) -> None:
        for step in range(50):
            writer.write_observation(step, [{"action_id": f"{worker}-{step}", "error": "x" * 500}])

    threads = [threading.Thread(target=observe, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    events = list(Recording.open(writer.path).events())
    ids = {e.results[0]["action_id"] for e in events if isinstance(e, ObservationEvent)}
    assert len(ids) == 200


def test_list_recordings_filters(tmp_path: Path) -> None:
    base = datetime(2026, 3, 1, tzinfo=UTC)
    outcomes = ["succeeded", "failed", None, "succeeded"]
    for index, outcome in enumerate(outcomes):
        writer = RecordingWriter.create(
            tmp_path,
            manifest(
                f"s{index}",
                started=base + timedelta(hours=index),
                task=f"task {index}" + (" export" if index == 3 else ""),
                policy="ocr" if index == 1 else "scripted",
            ),
        )
        if outcome is None:
            writer.close()
        else:
            writer.finish(outcome)
    (tmp_path / "not-a-recording").mkdir()
    newer = tmp_path / "from-the-future"
    newer.mkdir()
    (newer / MANIFEST_FILE).write_text(
        json.dumps({"format": "holodesk-recording", "version": FORMAT_VERSION + 1})
    )

    def ids(**filters: Any) -> list[str]:
        return [r.manifest.session_id for r in list_recordings(tmp_path, **filters)]

    assert ids() == ["s0", "s1", "s2", "s3"]
    assert ids(outcome="succeeded") == ["s0", "s3"]
    assert ids(ended=False) == ["s2"]
    assert ids(ended=True, policy="scripted") == ["s0", "s3"]
    assert ids(since=base + timedelta(hours=1), until=base + timedelta(hours=2)) == ["s1", "s2"]
    assert ids(task_contains="EXPORT") == ["s3"]
    with pytest.raises(RecordingError, match="not a directory"):
        list_recordings(tmp_path / "missing")
