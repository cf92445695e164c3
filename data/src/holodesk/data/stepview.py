"""A recording regrouped step by step, as export, report and replay read it.

The reader (holodesk.data.reader) gives the flat event log; its consumers want
"step k: the frame it was decided on, its actions, their results, and the frame
taken after them" (replay compares that last one). Steps are tied together by
frame ids and event order, so a resumed stream (two frames for one step) or a
lost event does not shift anything. The "message" and "results" dicts stay
opaque JSON: this package never imports protobuf.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from holodesk.data.format import (
    MANIFEST_FILE,
    ActionsEvent,
    EndEvent,
    Event,
    FrameEvent,
    Manifest,
    ObservationEvent,
    RecordingError,
    RewardEvent,
)
from holodesk.data.reader import Recording, outcome_of, step_events
from holodesk.values.encoding import ImageEncoding

Json = dict[str, Any]


@dataclass(frozen=True)
class FrameRef:
    """One frame event with its image file's (checked) path."""

    event: FrameEvent
    path: Path

    @property
    def frame_id(self) -> str:
        return self.event.frame_id

    @property
    def width(self) -> int:
        return self.event.width

    @property
    def height(self) -> int:
        return self.event.height

    @property
    def mime_type(self) -> str:
        return ImageEncoding(self.event.encoding).mime_type


@dataclass(frozen=True)
class StepView:
    step: int
    actions: ActionsEvent
    # The frame the actions were decided on (None if never logged).
    frame: FrameRef | None = None
    observation: ObservationEvent | None = None
    # The first frame logged after the actions: the screen they produced.
    next_frame: FrameRef | None = None

    @property
    def message(self) -> Json:
        return self.actions.message

    @property
    def action_list(self) -> list[Json]:
        actions = self.message.get("actions")
        return [a for a in actions if isinstance(a, dict)] if isinstance(actions, list) else []

    @property
    def sent(self) -> bool:
        """False for a last step whose done or fail alone ended the session: no
        Actions message carried it (recording-format.md, `message.sent`)."""
        return self.message.get("sent") is not False

    @property
    def thought(self) -> str:
        return str(self.message.get("thought") or "")

    @property
    def generation(self) -> Json | None:
        generation = self.message.get("generation")
        return generation if isinstance(generation, dict) else None

    @property
    def results(self) -> list[Json]:
        return self.observation.results if self.observation is not None else []

    def chosen_completion(self) -> Json | None:
        """The candidate the actions came from; None without a model generation."""
        generation = self.generation
        completions = generation.get("completions") if generation else None
        if generation is None or not isinstance(completions, list) or not completions:
            return None
        # MessageToDict leaves out zero values: no "chosen" means candidate 0.
        chosen = generation.get("chosen", 0)
        if not isinstance(chosen, int) or not 0 <= chosen < len(completions):
            return None
        completion = completions[chosen]
        return completion if isinstance(completion, dict) else None

    def result_for(self, action_id: str) -> Json | None:
        return next((r for r in self.results if r.get("action_id") == action_id), None)


@dataclass(frozen=True)
class LoadedRecording:
    """A recording read once: manifest, events, and frames by id."""

    recording: Recording
    events: list[Event]
    frames: dict[str, FrameRef]

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> LoadedRecording:
        recording = Recording.open(path)
        events = list(recording.events())
        frames = {
            e.frame_id: FrameRef(e, recording.frame_path(e))
            for e in events
            if isinstance(e, FrameEvent)
        }
        return cls(recording, events, frames)

    @property
    def manifest(self) -> Manifest:
        return self.recording.manifest

    @property
    def path(self) -> Path:
        return self.recording.path

    @property
    def recording_id(self) -> str:
        return self.recording.recording_id

    @property
    def end(self) -> EndEvent | None:
        return next((e for e in reversed(self.events) if isinstance(e, EndEvent)), None)

    @property
    def outcome(self) -> str | None:
        return outcome_of(self.manifest, self.end)

    @property
    def reward(self) -> float | None:
        if self.manifest.reward is not None:
            return self.manifest.reward
        rewards = [e.reward for e in self.events if isinstance(e, RewardEvent)]
        return next((r for r in reversed(rewards) if r is not None), None)

    @property
    def success(self) -> bool | None:
        if self.manifest.success is not None:
            return self.manifest.success
        found = [e.success for e in self.events if isinstance(e, RewardEvent)]
        return next((s for s in reversed(found) if s is not None), None)

    def first_frame(self) -> FrameRef | None:
        return next(
            (self.frames[e.frame_id] for e in self.events if isinstance(e, FrameEvent)), None
        )

    def duration_s(self) -> float | None:
        """Wall time from start to end (or to the last event of an unfinished recording)."""
        manifest = self.manifest
        if manifest.ended_at is not None:
            return max(0.0, (manifest.ended_at - manifest.started_at).total_seconds())
        return max((e.t for e in self.events), default=None)

    def steps(self) -> list[StepView]:
        """One StepView per actions event, in order."""
        latest: FrameRef | None = None
        steps: list[StepView] = []
        awaiting: int | None = None  # the step whose next frame is still to come
        for event in step_events(self.events):
            if isinstance(event, FrameEvent):
                latest = self.frames.get(event.frame_id)
                if awaiting is not None:
                    steps[awaiting] = replace(steps[awaiting], next_frame=latest)
                    awaiting = None
            elif isinstance(event, ActionsEvent):
                frame = self.frames.get(event.frame_id) if event.frame_id else latest
                steps.append(StepView(event.step, event, frame=frame))
                awaiting = len(steps) - 1
            elif isinstance(event, ObservationEvent):
                for index in range(len(steps) - 1, -1, -1):
                    if steps[index].step == event.step:
                        steps[index] = replace(steps[index], observation=event)
                        break
        return steps


def find_recordings(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Recording directories named directly, or found one level inside a recordings root."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if (path / MANIFEST_FILE).is_file():
            found.append(path)
        elif path.is_dir():
            inside = sorted(p for p in path.iterdir() if (p / MANIFEST_FILE).is_file())
            if not inside:
                raise RecordingError(f"{path} is neither a recording nor a folder of recordings")
            found.extend(inside)
        else:
            raise RecordingError(f"{path}: no such recording")
    return found
