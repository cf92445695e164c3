"""Re-executes a recording's actions on this desktop and compares each screen it leads to.

For every recorded step: the Actions message (opaque JSON in the recording) is
parsed back into the contract's message with json_format, converted by the
client's own convert.py, and run by the client's own ActionExecutor, with
coordinates mapped through the recorded frame exactly as the live client mapped
them. The screen is then captured the way the client captures (same region,
same downsizing and encoding, at the recorded frame's size) and compared with
the frame the recording holds for that moment.

Apps repaint asynchronously, and the live session's next frame came after the
model had thought for a while; so a step's screen is re-captured until it
matches or `settle_s` runs out, and only then called a mismatch.
Done / fail / ask_user are never executed: they talk to the daemon, not the desktop.

Before the first action the screen is compared with the recording's first frame
(step 0). When they differ, the replay stops there, having run nothing: the
recorded actions were meant for that screen, and on another one they do real work
nobody asked for (an app that was not reset receives its text a second time).
ReplaySettings.start_anyway is the caller's explicit "act anyway".
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from google.protobuf import json_format
from PIL import Image

from holodesk.client import actions as a
from holodesk.client import convert
from holodesk.client.capture import downsize, encode_within
from holodesk.client.executor import ActionExecutor
from holodesk.client.frames import DEFAULT_QUALITY, FrameSpec, SentFrame
from holodesk.client.replay.compare import (
    DEFAULT_TOLERANCE,
    FrameDiff,
    difference_mask,
    measure,
    side_by_side,
)
from holodesk.data.stepview import FrameRef, LoadedRecording, StepView
from holodesk.platform.base import Backend, Region
from holodesk.proto.v1 import agent_pb2, frame_pb2
from holodesk.values.encoding import ImageEncoding

DEFAULT_THRESHOLD = 0.02
# Share of the densest text-line window that may differ (compare.py): above a
# panel clock's change (11-16 pt: 2-9%), below a doubled word (19-28%), on Tk screens.
DEFAULT_LOCAL_THRESHOLD = 0.12
DEFAULT_SETTLE_S = 3.0
_POLL_S = 0.1
_STATUS_OK = "ACTION_STATUS_OK"


class ReplayError(Exception):
    """The recording cannot be replayed here (unreadable actions, a display that is gone)."""


@dataclass(frozen=True)
class ReplaySettings:
    # Fraction of a frame's pixels that may differ for a step to still match.
    threshold: float = DEFAULT_THRESHOLD
    # Fraction of the densest text-line window that may differ: catches a wrong text,
    # which is too small a part of the frame for `threshold` to see.
    local_threshold: float = DEFAULT_LOCAL_THRESHOLD
    # Per-channel difference (0-255) under which a pixel counts as unchanged.
    tolerance: int = DEFAULT_TOLERANCE
    # How long to keep re-capturing a screen that does not match yet.
    settle_s: float = DEFAULT_SETTLE_S
    poll_s: float = _POLL_S
    # Where to write side-by-side pictures of mismatching steps (None: nowhere).
    diff_dir: Path | None = None
    # Compare the screen with the recording's first frame before acting.
    check_start: bool = True
    # Act even when that comparison fails. Off by default: the recorded actions were
    # meant for the recorded screen, and on another one they do real, unwanted work
    # (an app not reset receives its text a second time).
    start_anyway: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.threshold <= 1:
            raise ValueError(f"threshold must be between 0 and 1, got {self.threshold}")
        if not 0 <= self.local_threshold <= 1:
            raise ValueError(f"local threshold must be between 0 and 1, got {self.local_threshold}")
        if not 0 <= self.tolerance <= 255:
            raise ValueError(f"tolerance must be 0-255, got {self.tolerance}")
        if self.settle_s < 0 or self.poll_s <= 0:
            raise ValueError("settle time must be 0 or more and the poll interval positive")

    def within(self, diff: FrameDiff) -> bool:
        """Whether a screen this different still matches: little changed overall and
        no line of it rewritten."""
        return diff.fraction <= self.threshold and diff.local_fraction <= self.local_threshold


@dataclass(frozen=True)
class StepReplay:
    """What happened to one step. Step 0 is the screen before the first action."""

    step: int
    recorded_actions: int = 0
    executed: int = 0
    # Actions that did not run as they did when recorded, in words.
    problems: tuple[str, ...] = ()
    # None: no recorded frame to compare with (the step ended the session).
    diff: FrameDiff | None = None
    matched: bool = True
    note: str = ""
    diff_file: Path | None = None


@dataclass
class ReplayResult:
    steps: list[StepReplay] = field(default_factory=list)
    # The screen before the first action did not match step 0, so nothing was run.
    stopped_at_start: bool = False

    @property
    def ok(self) -> bool:
        return all(step.matched for step in self.steps)

    @property
    def first_mismatch(self) -> StepReplay | None:
        return next((step for step in self.steps if not step.matched), None)


def recorded_batch(step: StepView) -> a.ActionBatch:
    """The step's Actions message, back through the contract and the client's converter."""
    message = agent_pb2.Actions()
    try:
        json_format.ParseDict(step.message, message, ignore_unknown_fields=True)
    except json_format.ParseError as error:
        raise ReplayError(
            f"step {step.step}: the recorded actions do not parse: {error}"
        ) from error
    return convert.batch_from_pb(message)


def recorded_spec(recording: LoadedRecording) -> FrameSpec:
    """The session's FrameSpec, as the daemon sent it (manifest frame_spec)."""
    spec = frame_pb2.FrameSpec()
    try:
        json_format.ParseDict(recording.manifest.frame_spec, spec, ignore_unknown_fields=True)
        return convert.frame_spec_from_pb(spec)
    except (json_format.ParseError, ValueError) as error:
        raise ReplayError(f"the recording's frame_spec is unusable: {error}") from error


def sent_frame(frame: FrameRef) -> SentFrame:
    """The recorded frame as the live client had sent it: what its actions' points refer to."""
    source = frame.event.source
    return SentFrame(
        frame_id=frame.frame_id,
        width=frame.width,
        height=frame.height,
        encoding=ImageEncoding(frame.event.encoding),
        data=b"",
        display_id=frame.event.display_id,
        source=Region(source.x, source.y, source.width, source.height),
        scale_factor=frame.event.scale_factor,
        captured_at=datetime.now(UTC),
    )


class Replayer:
    def __init__(
        self,
        recording: LoadedRecording,
        backend: Backend,
        settings: ReplaySettings | None = None,
        *,
        on_step: Callable[[StepReplay], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._recording = recording
        self._backend = backend
        self._settings = settings or ReplaySettings()
        self._on_step = on_step
        self._sleep = sleep
        self._clock = clock
        self._quality = recorded_spec(recording).quality
        self._executor = ActionExecutor(backend)

    def run(self) -> ReplayResult:
        result = ReplayResult()
        steps = self._recording.steps()
        first = self._recording.first_frame()
        if not steps:
            raise ReplayError(f"{self._recording.path}: the recording has no steps to replay")
        self._check_geometry()
        try:
            if self._settings.check_start and first is not None:
                start = self._compare(StepReplay(0, note="before the first step"), first)
                if not start.matched and not self._settings.start_anyway:
                    result.stopped_at_start = True
                    start = _with_note(start, "replay stopped here: no action was run")
                self._report(result, start)
                if result.stopped_at_start:
                    return result
            for step in steps:
                self._report(result, self._replay(step))
        finally:
            self._executor.release_all()
        return result

    def _report(self, result: ReplayResult, step: StepReplay) -> None:
        result.steps.append(step)
        if self._on_step is not None:
            self._on_step(step)

    def _replay(self, step: StepView) -> StepReplay:
        batch = recorded_batch(step)
        for frame in self._frames_named(step, batch):
            self._executor.remember_frame(sent_frame(frame))
        runnable: list[a.Action] = []
        problems: list[str] = []
        notes: list[str] = []
        for number, action in enumerate(batch.actions, start=1):
            if isinstance(action, a.Done | a.Fail | a.AskUser):
                continue
            recorded = step.result_for(action.action_id)
            if step.observation is not None and (
                recorded is None or recorded.get("status") != _STATUS_OK
            ):
                status = "no result" if recorded is None else str(recorded.get("status", "?"))
                notes.append(f"action {number} not replayed (recorded: {_status_word(status)})")
                continue
            runnable.append(action)
        report = self._executor.execute(runnable) if runnable else None
        if report is not None:
            numbers = {action.action_id: n for n, action in enumerate(batch.actions, start=1)}
            for action, outcome in zip(runnable, report.results, strict=True):
                if outcome.status is not a.ActionStatus.OK:
                    problems.append(
                        f"action {numbers[action.action_id]} ({_kind(action)}) "
                        f"{outcome.status.value}: {outcome.error or 'no reason given'}"
                    )
        replay = StepReplay(
            step=step.step,
            recorded_actions=len(batch.actions),
            executed=len(runnable),
            problems=tuple(problems),
            matched=not problems,
            note="; ".join(notes),
        )
        if step.next_frame is None:
            ended = any(isinstance(x, a.Done | a.Fail) for x in batch.actions)
            note = "the session ended here" if ended else "no frame was recorded after this step"
            return _with_note(replay, note)
        return self._compare(replay, step.next_frame)

    def _frames_named(self, step: StepView, batch: a.ActionBatch) -> list[FrameRef]:
        named = {action.frame_id for action in batch.actions if action.frame_id}
        frames = [self._recording.frames[f] for f in sorted(named) if f in self._recording.frames]
        if step.frame is not None and step.frame.frame_id not in named:
            frames.append(step.frame)
        return frames

    def _compare(self, replay: StepReplay, frame: FrameRef) -> StepReplay:
        settings = self._settings
        with Image.open(frame.path) as opened:
            recorded = opened.convert("RGB")
        deadline = self._clock() + settings.settle_s
        while True:
            replayed = self._capture(frame)
            mask = difference_mask(recorded, replayed, settings.tolerance)
            diff = measure(mask)
            if settings.within(diff) or self._clock() >= deadline:
                break
            self._sleep(settings.poll_s)
        matched = replay.matched and settings.within(diff)
        diff_file = None
        if not matched and settings.diff_dir is not None:
            settings.diff_dir.mkdir(parents=True, exist_ok=True)
            diff_file = settings.diff_dir / f"step-{replay.step:03d}.png"
            side_by_side(recorded, replayed, mask).save(diff_file)
        return replace(replay, diff=diff, matched=matched, diff_file=diff_file)

    def _capture(self, frame: FrameRef) -> Image.Image:
        """The screen now, captured as the client captured `frame`: its region, downsized
        to its size, encoded as it was (lossy artifacts alike), decoded again."""
        source = sent_frame(frame).source
        image = self._backend.screen.grab(source)
        if image.mode != "RGB":
            image = image.convert("RGB")
        image = downsize(image, (frame.width, frame.height))
        spec = FrameSpec(
            encoding=ImageEncoding(frame.event.encoding), quality=self._quality or DEFAULT_QUALITY
        )
        with Image.open(io.BytesIO(encode_within(image, spec))) as decoded:
            return decoded.convert("RGB")

    def _check_geometry(self) -> None:
        """Every recorded frame's region must still be on this desktop."""
        displays = self._backend.screen.displays()
        desktop = self._backend.screen.virtual_desktop()
        for frame in self._recording.frames.values():
            region = sent_frame(frame).source
            if region.width <= 0 or region.height <= 0:
                raise ReplayError(f"frame {frame.frame_id!r} records no screen region")
            if not desktop.contains_region(region):
                shown = ", ".join(f"{d.display_id or '?'} {d.bounds}" for d in displays)
                raise ReplayError(
                    f"frame {frame.frame_id!r} showed {region}, which is not on this desktop "
                    f"({shown}): replay on a desktop of the recorded size"
                )


def _with_note(replay: StepReplay, note: str) -> StepReplay:
    return replace(replay, note="; ".join(n for n in (replay.note, note) if n))


def _kind(action: a.Action) -> str:
    return type(action).__name__.lower()


def _status_word(status: str) -> str:
    return status.removeprefix("ACTION_STATUS_").lower().replace("_", " ")
