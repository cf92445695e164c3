"""Reads recordings, including ones that never ended (a crash, a SIGTERM, a live session).

Public API::

    recording = Recording.open(path)          # RecordingFormatError on another format/version
    recording.manifest                        # format.Manifest
    for event in recording.events(): ...      # FrameEvent | ActionsEvent | ... in file order
    for step in recording.steps(): ...        # Step(step, frame, actions, observation)
    recording.frame_bytes(frame_id)           # the image exactly as recorded
    recording.end, recording.outcome, recording.rewards
    list_recordings(root, outcome="succeeded", since=..., policy=..., ended=True)

Tolerance: a last line of events.jsonl that is not complete JSON (the event in flight when
the writer died) is ignored; a bad line anywhere else is a :class:`RecordingFormatError`
naming the line. Unknown event types and unknown fields are skipped (see format.py).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from holodesk.data.format import (
    EVENTS_FILE,
    MANIFEST_FILE,
    ActionsEvent,
    EndEvent,
    Event,
    FrameEvent,
    Manifest,
    ObservationEvent,
    RecordingError,
    RecordingFormatError,
    RewardEvent,
    is_refresh,
    parse_event,
    parse_manifest,
)

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Step:
    """One model step: the frame the policy saw, the actions it sent, their results.

    Any part may be missing in a recording that stopped mid-step. When a step has
    several frame events (a resumed stream), ``frame`` is the last one before the actions.
    """

    step: int
    frame: FrameEvent | None
    actions: ActionsEvent | None
    observation: ObservationEvent | None


def step_events(events: Iterable[Event]) -> Iterator[Event]:
    """The events without a refresh recorded as a step (older client recordings: an
    actions event with no actions under the last step's number, then the empty
    observation that answered it), so it cannot replace the step's own."""
    last_step = 0
    answering_refresh: int | None = None
    for event in events:
        if isinstance(event, ActionsEvent):
            if is_refresh(event.step, _action_count(event), last_step):
                answering_refresh = event.step
                continue
            last_step, answering_refresh = event.step, None
        elif isinstance(event, ObservationEvent) and event.step == answering_refresh:
            answering_refresh = None
            if not event.results:
                continue
        yield event


def _action_count(event: ActionsEvent) -> int:
    actions = event.message.get("actions")
    return len(actions) if isinstance(actions, list) else 0


def outcome_of(manifest: Manifest, end: EndEvent | None) -> str | None:
    """The manifest's outcome, else the end event's (the writer may die between the two)."""
    if manifest.outcome is not None:
        return manifest.outcome
    return end.outcome if end is not None else None


class Recording:
    """One recording directory; events are read from disk on each call (a live recording grows)."""

    def __init__(self, path: Path, manifest: Manifest) -> None:
        self.path = path
        self.manifest = manifest

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Recording:
        directory = Path(path)
        manifest_path = directory / MANIFEST_FILE
        try:
            text = manifest_path.read_text(encoding="utf-8")
        except FileNotFoundError as error:
            raise RecordingError(
                f"{directory} is not a recording: {MANIFEST_FILE} is missing"
            ) from error
        except OSError as error:
            raise RecordingError(f"cannot read {manifest_path}: {error}") from error
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise RecordingFormatError(f"{manifest_path}: not JSON: {error}") from error
        return cls(directory, parse_manifest(data, source=str(manifest_path)))

    @property
    def recording_id(self) -> str:
        return self.manifest.recording_id

    def events(self) -> Iterator[Event]:
        """Every event of a known type, in file order."""
        path = self.path / EVENTS_FILE
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as error:
            raise RecordingError(f"cannot read {path}: {error}") from error
        lines = raw.split(b"\n")
        # After the last newline: empty, or the event in flight when the writer stopped.
        tail = lines.pop()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as error:
                if number == len(lines) and not tail:
                    # A complete-looking but broken last line: also the event in flight.
                    _log.warning("%s: ignoring an unreadable last line (%s)", path, error)
                    return
                raise RecordingFormatError(f"{path}:{number}: not JSON: {error}") from error
            event = parse_event(data, source=f"{path}:{number}")
            if event is not None:
                yield event
        if tail.strip():
            try:
                event = parse_event(json.loads(tail), source=f"{path}:{len(lines) + 1}")
            except (json.JSONDecodeError, RecordingFormatError):
                _log.warning("%s: ignoring a truncated last line", path)
                return
            if event is not None:
                yield event

    def steps(self) -> list[Step]:
        """Events grouped by step number, in step order; steps with only a frame included."""
        frames: dict[int, FrameEvent] = {}
        actions: dict[int, ActionsEvent] = {}
        observations: dict[int, ObservationEvent] = {}
        for event in step_events(self.events()):
            if isinstance(event, FrameEvent):
                if event.step not in actions:
                    frames[event.step] = event
            elif isinstance(event, ActionsEvent):
                actions[event.step] = event
            elif isinstance(event, ObservationEvent):
                observations[event.step] = event
        numbers = sorted(set(frames) | set(actions) | set(observations))
        return [Step(n, frames.get(n), actions.get(n), observations.get(n)) for n in numbers]

    def frame_events(self) -> dict[str, FrameEvent]:
        """Frame events by frame id (the last one wins for a repeated id)."""
        return {event.frame_id: event for event in self.events() if isinstance(event, FrameEvent)}

    def frame_path(self, frame: str | FrameEvent) -> Path:
        """The image file of a frame event or frame id, checked to lie inside the recording."""
        event = frame if isinstance(frame, FrameEvent) else self.frame_events().get(frame)
        if event is None:
            raise RecordingError(f"{self.path}: no frame {frame!r}")
        root = self.path.resolve()
        target = (root / event.file).resolve()
        if not target.is_relative_to(root):
            raise RecordingFormatError(
                f"{self.path}: frame {event.frame_id!r} names a file outside: {event.file!r}"
            )
        return target

    def frame_bytes(self, frame: str | FrameEvent) -> bytes:
        """The image exactly as recorded, by frame id or frame event."""
        path = self.frame_path(frame)
        try:
            return path.read_bytes()
        except OSError as error:
            raise RecordingError(f"cannot read frame file {path}: {error}") from error

    @property
    def end(self) -> EndEvent | None:
        """The end event, or ``None`` for a recording that never ended."""
        found: EndEvent | None = None
        for event in self.events():
            if isinstance(event, EndEvent):
                found = event
        return found

    @property
    def ended(self) -> bool:
        return self.manifest.outcome is not None or self.end is not None

    @property
    def outcome(self) -> str | None:
        return outcome_of(self.manifest, self.end)

    @property
    def rewards(self) -> list[RewardEvent]:
        return [event for event in self.events() if isinstance(event, RewardEvent)]

    def __repr__(self) -> str:
        return f"Recording({str(self.path)!r})"


def list_recordings(
    root: str | os.PathLike[str],
    *,
    outcome: str | None = None,
    ended: bool | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    policy: str | None = None,
    task_contains: str | None = None,
) -> list[Recording]:
    """Recordings directly under ``root``, oldest first, filtered.

    ``outcome`` compares with :attr:`Recording.outcome`; ``ended`` True/False keeps
    finished/unfinished ones; ``since``/``until`` bound ``started_at`` (timezone-aware).
    Directories that are not readable recordings (no manifest, another format, a newer
    version) are skipped with a warning.
    """
    base = Path(root)
    if not base.is_dir():
        raise RecordingError(f"recordings root {base} is not a directory")
    found: list[Recording] = []
    for child in sorted(base.iterdir()):
        if not child.is_dir() or not (child / MANIFEST_FILE).is_file():
            continue
        try:
            recording = Recording.open(child)
        except RecordingError as error:
            _log.warning("skipping %s: %s", child, error)
            continue
        manifest = recording.manifest
        if since is not None and manifest.started_at < since:
            continue
        if until is not None and manifest.started_at > until:
            continue
        if policy is not None and manifest.policy != policy:
            continue
        if task_contains is not None and task_contains.lower() not in manifest.task.lower():
            continue
        if outcome is not None and recording.outcome != outcome:
            continue
        if ended is not None and recording.ended != ended:
            continue
        found.append(recording)
    found.sort(key=lambda recording: (recording.manifest.started_at, recording.recording_id))
    return found
