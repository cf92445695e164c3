"""Replay's logic on the fake backend: what runs, how points map, how mismatches are found.

The recordings are written with the real RecordingWriter from frames the real
FrameCapturer took of the fake screen, and actions serialized the way the
daemon's recorder does (json_format of contract messages). The end-to-end
proof on a real X server is tests/e2e/test_replay_x11.py.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from PIL import Image, ImageDraw

from holodesk.client import actions as a
from holodesk.client.capture import FrameCapturer
from holodesk.client.cli import main
from holodesk.client.exit_codes import ExitCode
from holodesk.client.frames import FrameSpec
from holodesk.client.recording import write_whole_frame
from holodesk.client.replay.compare import compare, difference_mask
from holodesk.client.replay.runner import (
    DEFAULT_LOCAL_THRESHOLD,
    Replayer,
    ReplayError,
    ReplaySettings,
    StepReplay,
)
from holodesk.data.format import ClientInfo, Manifest, make_recording_id
from holodesk.data.stepview import LoadedRecording
from holodesk.data.writer import RecordingWriter
from holodesk.platform.backends import fake
from holodesk.platform.backends.fake import Button, Key, Move, Text
from holodesk.platform.base import DisplayInfo, MouseButton, Region
from tests.support import client_wire

SPEC = FrameSpec(max_width=640, max_height=400)
Json = dict[str, Any]
# Actions whose frame_id is filled in with the frame of their step.
FRAME = "{frame}"


def as_json(action: a.Action) -> Json:
    return json_format.MessageToDict(
        client_wire.action_to_pb(action), preserving_proto_field_name=True
    )


def ok(action_id: str) -> Json:
    return {"action_id": action_id, "status": "ACTION_STATUS_OK", "duration_ms": 2}


def _writer(root: Path, session_id: str, task: str, policy: str) -> RecordingWriter:
    """A fresh recording on the fake backend at SPEC, as a client's or the daemon's."""
    started = datetime.now(UTC)
    manifest = Manifest(
        recording_id=make_recording_id(session_id, started),
        session_id=session_id,
        task=task,
        policy=policy,
        client=ClientInfo(os="fake", backend="fake"),
        frame_spec=json_format.MessageToDict(
            client_wire.frame_spec_to_pb(SPEC), preserving_proto_field_name=True
        ),
        started_at=started,
    )
    return RecordingWriter.create(root, manifest)


def _write_capture(writer: RecordingWriter, step: int, capturer: FrameCapturer) -> str:
    """A fresh capture of the screen recorded as a frame of `step`; its frame id."""
    shot = capturer.capture()
    write_whole_frame(writer, step, shot)
    return shot.frame_id


def _on_frame(action: a.Action, frame_id: str) -> Json:
    """The action as recorded, its placeholder frame id replaced by the real one."""
    body = as_json(action)
    if body.get("frame_id") == FRAME:
        body["frame_id"] = frame_id
    return body


def record(
    root: Path,
    backend: fake.FakeBackend,
    steps: list[list[a.Action]],
    results: dict[str, str] | None = None,
) -> Path:
    """Record a session on `backend` as the daemon would: a frame, then the step's actions and
    their results, for each step; `results` overrides an action's recorded status."""
    writer = _writer(root, "s-replay", "replay me", "scripted")
    capturer = FrameCapturer(backend.screen, SPEC)
    for number, actions in enumerate(steps, start=1):
        frame_id = _write_capture(writer, number, capturer)
        bodies = [_on_frame(action, frame_id) for action in actions]
        writer.write_actions(number, {"step": number, "actions": bodies}, frame_id=frame_id)
        statuses = results or {}
        writer.write_observation(
            number,
            [
                {**ok(x.action_id), "status": statuses.get(x.action_id, "ACTION_STATUS_OK")}
                for x in actions
            ],
        )
    if not any(isinstance(x, a.Done) for x in steps[-1]):
        _write_capture(writer, len(steps) + 1, capturer)
    writer.finish("succeeded", steps=len(steps))
    return writer.path


def click(action_id: str, x: float, y: float, **extra: Any) -> a.Click:
    return a.Click(action_id=action_id, frame_id=FRAME, point=a.FramePoint(x, y), **extra)


def paint(backend: fake.FakeBackend, box: tuple[int, int, int, int], color: str) -> None:
    ImageDraw.Draw(backend.screen.image).rectangle(box, fill=color)


FORM: list[list[a.Action]] = [
    [click("c1", 100, 50)],
    [
        a.TypeText(action_id="t1", text="hé"),
        a.KeyChord(action_id="k1", keys=("ctrl", "a")),
    ],
    [a.Done(action_id="d1", answer="done")],
]


def test_replay_runs_the_actions_through_the_recorded_frames(tmp_path: Path) -> None:
    recording = record(tmp_path, fake.create(), FORM)
    backend = fake.create()
    result = Replayer(LoadedRecording.load(recording), backend, ReplaySettings(settle_s=0)).run()

    assert result.ok, result.steps
    assert [s.step for s in result.steps] == [0, 1, 2, 3]
    assert [s.executed for s in result.steps] == [0, 1, 2, 0]
    # Step 3 (done) ends the session: nothing to run, nothing to compare.
    assert result.steps[3].diff is None
    assert "ended" in result.steps[3].note
    assert result.steps[1].diff is not None
    assert result.steps[1].diff.changed == 0
    # The frame was 640x400 of a 1280x800 desktop: frame (100, 50) is desktop (200, 100).
    assert backend.input.events == [
        Move(200, 100),
        Button(MouseButton.LEFT, True),
        Button(MouseButton.LEFT, False),
        Text("hé"),
        Key("ctrl", True),
        Key("a", True),
        Key("a", False),
        Key("ctrl", False),
    ]


def test_actions_that_did_not_run_when_recorded_are_not_replayed(tmp_path: Path) -> None:
    steps: list[list[a.Action]] = [
        [
            click("c1", 10, 10),
            a.Scroll(action_id="s1", frame_id=FRAME, point=a.FramePoint(20, 20), dy=3),
            a.TypeText(action_id="t1", text="never"),
        ]
    ]
    recording = record(
        tmp_path,
        fake.create(),
        steps,
        {"s1": "ACTION_STATUS_REJECTED", "t1": "ACTION_STATUS_SKIPPED"},
    )
    backend = fake.create()
    result = Replayer(LoadedRecording.load(recording), backend, ReplaySettings(settle_s=0)).run()
    assert result.ok
    assert result.steps[1].executed == 1
    assert "action 2 not replayed (recorded: rejected)" in result.steps[1].note
    assert "action 3 not replayed (recorded: skipped)" in result.steps[1].note
    assert not [e for e in backend.input.events if isinstance(e, Text)]


@pytest.mark.parametrize("start_anyway", [False, True], ids=["stops", "start-anyway"])
def test_a_start_screen_that_does_not_match_stops_before_any_action(
    tmp_path: Path, start_anyway: bool
) -> None:
    recording = record(tmp_path, fake.create(), FORM)
    backend = fake.create()
    paint(backend, (400, 300, 799, 499), "#ff00ff")  # not the screen the session began on
    settings = ReplaySettings(settle_s=0, start_anyway=start_anyway)
    result = Replayer(LoadedRecording.load(recording), backend, settings).run()

    assert not result.ok
    assert result.steps[0].step == 0
    assert not result.steps[0].matched
    if start_anyway:
        assert not result.stopped_at_start
        assert [s.step for s in result.steps] == [0, 1, 2, 3]
        assert Text("hé") in backend.input.events
    else:
        assert result.stopped_at_start
        assert [s.step for s in result.steps] == [0]
        assert "no action was run" in result.steps[0].note
        assert backend.input.events == []


def test_a_changed_screen_is_reported_at_its_step_with_where_it_changed(tmp_path: Path) -> None:
    recording = record(tmp_path, fake.create(), FORM)
    backend = fake.create()

    def change_the_app(step: StepReplay) -> None:
        # Between steps 1 and 2: the app now draws something new at desktop (400..799, 300..499).
        if step.step == 1:
            paint(backend, (400, 300, 799, 499), "#ff00ff")

    diffs = tmp_path / "diffs"
    result = Replayer(
        LoadedRecording.load(recording),
        backend,
        ReplaySettings(settle_s=0, diff_dir=diffs),
        on_step=change_the_app,
    ).run()

    assert not result.ok
    assert [s.matched for s in result.steps] == [True, True, False, True]
    mismatch = result.first_mismatch
    assert mismatch is not None
    assert mismatch.step == 2
    assert mismatch.diff is not None
    # In frame pixels (half the desktop's), give or take the resampling filter's reach.
    left, top, right, bottom = mismatch.diff.bbox or (0, 0, 0, 0)
    assert abs(left - 200) <= 2
    assert abs(top - 150) <= 2
    assert abs(right - 400) <= 2
    assert abs(bottom - 250) <= 2
    assert mismatch.diff.fraction == pytest.approx(200 * 100 / (640 * 400), rel=0.05)
    assert mismatch.diff_file == diffs / "step-002.png"
    assert sorted(p.name for p in diffs.iterdir()) == ["step-002.png"]
    with Image.open(mismatch.diff_file) as picture:
        assert picture.height == 400
        assert picture.width > 3 * 640


def test_the_thresholds_decide_what_is_a_mismatch(tmp_path: Path) -> None:
    recording = record(tmp_path, fake.create(), FORM[:1])
    small = (0, 0, 49, 49)  # 2500 desktop pixels: about 0.24% of the frame

    def replay(threshold: float, local_threshold: float = 1.0) -> bool:
        backend = fake.create()
        paint(backend, small, "#00ff00")
        settings = ReplaySettings(threshold=threshold, local_threshold=local_threshold, settle_s=0)
        return Replayer(LoadedRecording.load(recording), backend, settings).run().ok

    # The whole frame's share: 0.24% is within 2%, not within 0.1%.
    assert replay(0.02)
    assert not replay(0.001)
    # The densest text-line window (64x16 of this 640x400 frame) is 25/64 changed: the
    # default local threshold sees what the global one does not.
    assert not replay(0.02, DEFAULT_LOCAL_THRESHOLD)
    assert replay(0.02, 0.4)


def test_the_densest_window_counts_a_few_changed_glyphs() -> None:
    base = Image.new("RGB", (640, 400), (255, 255, 255))
    glyphs = base.copy()
    draw = ImageDraw.Draw(glyphs)
    for i in range(6):  # six 4x10 strokes along a line: 240 pixels, 0.09% of the frame
        draw.rectangle((100 + 8 * i, 50, 103 + 8 * i, 59), fill=(0, 0, 0))
    diff = compare(base, glyphs)
    assert diff.changed == 240
    assert diff.fraction < 0.001
    assert diff.densest == 240
    assert diff.window is not None
    left, top, right, bottom = diff.window
    assert (right - left, bottom - top) == (64, 16)
    # It holds all six strokes (x 100..131, y 50..59).
    assert left <= 100
    assert right >= 132
    assert top <= 50
    assert bottom >= 60
    assert diff.local_fraction == pytest.approx(240 / (64 * 16))
    assert compare(base, base).local_fraction == 0.0


def test_a_replayed_action_that_fails_is_a_mismatch(tmp_path: Path) -> None:
    recording = record(tmp_path, fake.create(), FORM)
    backend = fake.create()
    backend.input.fail_on.add(Text)
    result = Replayer(LoadedRecording.load(recording), backend, ReplaySettings(settle_s=0)).run()
    step = result.steps[2]
    assert not step.matched
    assert step.problems
    assert step.problems[0].startswith("action 1 (typetext) failed: fake failure injected")
    # The rest of the batch is skipped, as the live client would.
    assert "action 2 (keychord) skipped" in step.problems[1]


def test_a_screen_that_settles_late_still_matches(tmp_path: Path) -> None:
    recording = record(tmp_path, fake.create(), FORM[:1])
    backend = fake.create()
    original = backend.screen.image.copy()
    paint(backend, (0, 0, 639, 399), "#000000")  # still being drawn
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        backend.screen.image = original.copy()  # the app finished drawing

    now = [0.0]
    result = Replayer(
        LoadedRecording.load(recording),
        backend,
        ReplaySettings(settle_s=5.0, poll_s=0.25),
        sleep=sleep,
        clock=lambda: now[0],
    ).run()
    assert result.ok
    assert waits == [0.25]


def test_a_desktop_without_the_recorded_region_is_refused(tmp_path: Path) -> None:
    recording = record(tmp_path, fake.create(), FORM)
    small = fake.create(displays=(DisplayInfo("d", Region(0, 0, 800, 600), primary=True),))
    with pytest.raises(ReplayError, match="not on this desktop"):
        Replayer(LoadedRecording.load(recording), small).run()


def test_unparsable_recorded_actions_are_a_clear_error(tmp_path: Path) -> None:
    recording = record(tmp_path, fake.create(), FORM)
    events = recording / "events.jsonl"
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    for event in lines:
        if event["type"] == "actions" and event["step"] == 1:
            event["message"]["actions"][0]["click"]["count"] = "many"
    events.write_text("".join(json.dumps(event) + "\n" for event in lines))
    with pytest.raises(ReplayError, match="step 1: the recorded actions do not parse"):
        Replayer(LoadedRecording.load(recording), fake.create(), ReplaySettings(settle_s=0)).run()


def test_the_cli_exits_0_when_all_steps_match_and_1_when_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--backend fake` opens a fresh fake desktop with its default test pattern.
    recording = record(tmp_path / "same", fake.create(), FORM)
    assert main(["replay", str(recording), "--backend", "fake"]) == ExitCode.SUCCEEDED
    out = capsys.readouterr().out
    assert "all steps match" in out

    changed = fake.create()
    paint(changed, (0, 0, 1279, 799), "#123456")
    other = record(tmp_path / "other", changed, FORM)
    code = main(
        ["replay", str(other), "--backend", "fake", "--settle", "0", "--diff-dir", str(tmp_path)]
    )
    assert code == ExitCode.FAILED
    out = capsys.readouterr().out
    assert "MISMATCH" in out
    assert "mismatch" in out

    assert main(["replay", str(tmp_path / "nope"), "--backend", "fake"]) == ExitCode.USAGE
    assert "is not a recording" in capsys.readouterr().err
    assert main(["replay", str(recording), "--threshold", "2"]) == ExitCode.USAGE


def test_compare_counts_pixels_beyond_the_tolerance() -> None:
    base = Image.new("RGB", (10, 10), (100, 100, 100))
    near = Image.new("RGB", (10, 10), (110, 100, 100))
    far = base.copy()
    far.putpixel((3, 4), (100, 100, 200))
    assert compare(base, near, tolerance=16).changed == 0
    assert compare(base, near, tolerance=5).changed == 100
    diff = compare(base, far)
    assert (diff.changed, diff.bbox) == (1, (3, 4, 4, 5))
    assert diff.fraction == pytest.approx(0.01)
    with pytest.raises(ValueError, match="cannot compare"):
        difference_mask(base, Image.new("RGB", (5, 5)))


def record_with_refreshes(root: Path, backend: fake.FakeBackend, *, as_steps: bool) -> Path:
    """An attached desktop's client recording: a refresh before the first step and one
    after it (an Actions message without actions repeating the last step's number).
    `as_steps`: written as before they were left out, an empty actions event and an
    observation without results for each; else as now, the frame alone."""
    writer = _writer(root, "s-desk", "desk", "computer")
    capturer = FrameCapturer(backend.screen, SPEC)

    def frame(step: int) -> str:
        return _write_capture(writer, step, capturer)

    def refresh(last_step: int, frame_id: str) -> None:
        if as_steps:
            body = {"step": last_step} if last_step else {}
            writer.write_actions(last_step, body, frame_id=frame_id)
            if last_step:
                writer.write_observation(last_step, [])

    def step(number: int, action: a.Action, frame_id: str) -> None:
        body = _on_frame(action, frame_id)
        writer.write_actions(number, {"step": number, "actions": [body]}, frame_id=frame_id)
        writer.write_observation(number, [ok(action.action_id)])

    refresh(0, frame(1))
    step(1, click("c1", 100, 50), frame(1))
    refresh(1, frame(2))
    step(2, a.TypeText(action_id="t1", text="hé"), frame(2))
    frame(3)
    writer.finish("cancelled", steps=2)
    return writer.path


@pytest.mark.parametrize("as_steps", [True, False], ids=["written-as-steps", "frames-only"])
def test_a_recording_with_refreshes_replays_each_step_once(tmp_path: Path, as_steps: bool) -> None:
    recording = record_with_refreshes(tmp_path, fake.create(), as_steps=as_steps)
    backend = fake.create()
    result = Replayer(LoadedRecording.load(recording), backend, ReplaySettings(settle_s=0)).run()

    assert result.ok, result.steps
    # A refresh written as a step is no step (reader.step_events): the start check,
    # then the two steps, whichever shape the recording has.
    assert sum(s.executed for s in result.steps) == 2
    assert [s.step for s in result.steps] == [0, 1, 2]
    assert backend.input.events == [
        Move(200, 100),
        Button(MouseButton.LEFT, True),
        Button(MouseButton.LEFT, False),
        Text("hé"),
    ]
