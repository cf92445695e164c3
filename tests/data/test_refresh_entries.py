"""Older client recordings wrote an attached desktop's refresh (an Actions message
without actions, under the last step's number) as an actions event and an empty
observation. Readers skip both, so the refresh cannot replace the step's own
actions and results in a report, an export or a replay."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from holodesk.data.format import ClientInfo, Manifest, is_refresh, make_recording_id
from holodesk.data.reader import Recording
from holodesk.data.stepview import LoadedRecording
from holodesk.data.writer import RecordingWriter
from tests.data.recordings import click, ok, png


def _old_client_recording(root: Path) -> Path:
    started = datetime.now(UTC)
    manifest = Manifest(
        recording_id=make_recording_id("s-old", started),
        session_id="s-old",
        task="desk",
        policy="computer",
        client=ClientInfo(os="fake", backend="fake"),
        started_at=started,
    )
    writer = RecordingWriter.create(root, manifest)
    image = png(8, 6, (10, 20, 30))

    def frame(step: int, frame_id: str) -> None:
        writer.write_frame(step, frame_id, image, encoding="png", width=8, height=6)

    frame(0, "f0")
    writer.write_actions(0, {}, frame_id="f0")  # a refresh before the first step
    writer.write_actions(1, {"step": 1, "actions": [click("c1", "f0", 4, 3)]}, frame_id="f0")
    writer.write_observation(1, ok("c1"))
    frame(1, "f1")
    writer.write_actions(1, {"step": 1}, frame_id="f1")  # a refresh after it
    writer.write_observation(1, [])
    writer.write_actions(2, {"step": 2, "actions": [click("c2", "f1", 5, 3)]}, frame_id="f1")
    writer.write_observation(2, ok("c2"))
    writer.write_actions(3, {"step": 3}, frame_id="f1")  # a step without actions is a step
    writer.finish("succeeded", steps=3)
    return writer.path


def test_the_refresh_rule_is_no_actions_under_the_last_steps_number() -> None:
    assert is_refresh(1, 0, last_step=1)
    assert is_refresh(0, 0, last_step=0)
    assert not is_refresh(2, 0, last_step=1)  # the next number: a step without actions
    assert not is_refresh(1, 1, last_step=1)  # actions: a step resent after a resume


def test_the_reader_keeps_each_steps_own_actions_and_results(tmp_path: Path) -> None:
    steps = Recording.open(_old_client_recording(tmp_path)).steps()
    assert [s.step for s in steps] == [0, 1, 2, 3]
    by_number = {s.step: s for s in steps}
    assert by_number[0].actions is None
    step_one = by_number[1]
    assert step_one.actions is not None
    assert step_one.observation is not None
    assert [a["action_id"] for a in step_one.actions.message["actions"]] == ["c1"]
    assert [r["action_id"] for r in step_one.observation.results] == ["c1"]
    assert by_number[3].actions is not None


def test_the_step_views_have_one_view_per_real_step(tmp_path: Path) -> None:
    views = LoadedRecording.load(_old_client_recording(tmp_path)).steps()
    assert [(v.step, [a["action_id"] for a in v.action_list]) for v in views] == [
        (1, ["c1"]),
        (2, ["c2"]),
        (3, []),
    ]
    assert [r["action_id"] for r in views[0].results] == ["c1"]
    assert views[0].next_frame is not None
    assert views[0].next_frame.frame_id == "f1"
