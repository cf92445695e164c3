"""A recording's model steps -> the token rows an RL trainer trains on, format-free.

Why its own module: which sampled completions a trainer may use, and what each row
holds, is one job; trainer_export.py writes the rows as Parquet. A trainer must
never re-tokenize (the classic train/inference mismatch), so a row is only made
from what the engine recorded: the prompt's token ids exactly as the engine saw
them (Generation.prompt_token_ids), each completion's token ids and sampling
logprobs (never recomputed), and the images the prompt showed.

One row per sampled completion of a step's last model call. The recorded prompt
ids are that call's: a step whose output did not parse asks again with a repair
prompt (the old prompt, the bad answer, the error), so completions of earlier
attempts had another prompt, which was not kept as ids; they are skipped, counted.
A call samples the session's `candidates` completions at once (SamplingParams.
candidates), so the last call's completions are the step's last `candidates`.

Nothing a trainer could misuse becomes a row: a step without prompt ids, a
completion without token ids or logprobs, a prompt image whose pixels the
recording cannot give back, or data that contradicts itself is skipped with a
counted reason (:class:`Skip`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from PIL import Image

from holodesk.data.export_rows import DatasetImage, dataset_image
from holodesk.data.format import ImagePart
from holodesk.data.stepview import Json, LoadedRecording, StepView
from holodesk.data.trainer_images import engine_input
from holodesk.values.generation import VersionSpan

# Token ids are written as int32: every vocabulary fits, and a trainer's tensors use it.
MAX_TOKEN_ID = 2**31 - 1

NO_GENERATION = "no model generation (a policy without a model)"
NO_PROMPT_IDS = "no prompt token ids: the session did not ask, Sampling(prompt_token_ids=True)"
NO_PROMPT_IDS_GIVEN = (
    "no prompt token ids though the session asked: its engine gives none (an "
    "OpenAI-compatible server), or the prompt was longer than the wire carries"
)
NO_COMPLETIONS = "no sampled completion recorded"
NO_COMPLETION_TOKENS = (
    "no completion token ids or logprobs: the session did not ask, Sampling(logprobs=True)"
)
NO_COMPLETION_TOKENS_GIVEN = (
    "no completion token ids or logprobs though the session asked: its engine gives no "
    "token ids (an OpenAI-compatible server)"
)
EARLIER_ATTEMPT = (
    "sampled by an earlier attempt of its step (before a repair prompt), "
    "whose prompt was not kept as token ids"
)
UNKNOWN_CALL = (
    "cannot tell which model call sampled it (the step's completions are not a "
    "multiple of the session's candidates)"
)
IMAGES_UNNAMED = "the prompt's images are not named (recorded before prompt images were)"
FRAME_MISSING = "a prompt image's frame was not recorded"
FRAME_UNREADABLE = "a prompt image's frame file is missing or not a readable image"


@dataclass(frozen=True, order=True)
class Skip:
    """Why a step (all its completions) or one completion gave no row."""

    unit: Literal["step", "completion"]
    reason: str

    def __str__(self) -> str:
        return f"{self.unit}(s): {self.reason}"


class _SkipError(Exception):
    """A step or completion gives no row; the message is its counted reason."""


def _corrupt(detail: str) -> _SkipError:
    return _SkipError(f"corrupt: {detail}")


@dataclass(frozen=True)
class PromptImage:
    """An image of the prompt: the frame it came from, the content id naming the pixels
    the model saw, their size, and the pixels the engine's processor was handed."""

    frame_id: str
    content_id: str
    # The frame's image file, relative to the recording directory.
    file: str
    width: int
    height: int
    pixels: DatasetImage


@dataclass(frozen=True)
class TrainerRow:
    """One sampled completion with the prompt it was sampled from, as token ids."""

    recording_id: str
    session_id: str
    task: str
    step: int
    completion_index: int
    # The step's actions came from this completion.
    chosen: bool
    parsed: bool
    prompt_token_ids: tuple[int, ...]
    completion_token_ids: tuple[int, ...]
    completion_logprobs: tuple[float, ...]
    completion_text: str
    # The step's (Generation.policy_version) and its label.
    policy_version: int
    policy_label: str
    # This completion's tokens by the version that sampled them.
    versions: tuple[VersionSpan, ...]
    images: tuple[PromptImage, ...]
    outcome: str | None
    reward: float | None
    success: bool | None
    policy: str
    dialect: str | None
    model: str | None

    @property
    def loss_mask(self) -> list[int]:
        """Over prompt + completion: 0 for the prompt's tokens, 1 for the model's."""
        return [0] * len(self.prompt_token_ids) + [1] * len(self.completion_token_ids)

    @property
    def mixed_versions(self) -> bool:
        """The weights changed while this completion was sampled."""
        return len({span.version for span in self.versions}) > 1

    def columns(self) -> Json:
        """Every column but the images' pixels."""
        return {
            "recording_id": self.recording_id,
            "session_id": self.session_id,
            "task": self.task,
            "step": self.step,
            "completion_index": self.completion_index,
            "chosen": self.chosen,
            "parsed": self.parsed,
            "prompt_token_ids": list(self.prompt_token_ids),
            "completion_token_ids": list(self.completion_token_ids),
            "completion_logprobs": list(self.completion_logprobs),
            "loss_mask": self.loss_mask,
            "completion_text": self.completion_text,
            "policy_version": self.policy_version,
            "policy_label": self.policy_label,
            "versions": [
                {"version": s.version, "start": s.start, "end": s.end} for s in self.versions
            ],
            "mixed_versions": self.mixed_versions,
            "image_content_ids": [i.content_id for i in self.images],
            "image_frame_ids": [i.frame_id for i in self.images],
            "image_files": [i.file for i in self.images],
            "image_sizes": [{"width": i.width, "height": i.height} for i in self.images],
            "outcome": self.outcome,
            "reward": self.reward,
            "success": self.success,
            "policy": self.policy,
            "dialect": self.dialect,
            "model": self.model,
        }


def trainer_rows(recording: LoadedRecording, skips: Counter[Skip]) -> Iterator[TrainerRow]:
    """The rows of one recording, step by step; every step or completion left out is
    counted in `skips` by its reason."""
    rows = _RecordingRows(recording, skips)
    for step in recording.steps():
        try:
            made = rows.of_step(step)
        except _SkipError as skip:
            skips[Skip("step", str(skip))] += 1
            continue
        yield from made


@dataclass(frozen=True)
class _StepTokens:
    """What every row of a step shares."""

    prompt_ids: tuple[int, ...]
    images: tuple[PromptImage, ...]
    # The completion whose call's prompt the ids are: the chosen one, else the last.
    anchor: int
    # The chosen completion's index, None when no completion parsed.
    chosen: int | None


class _RecordingRows:
    """Rows of one recording's steps; frame files are checked once each."""

    def __init__(self, recording: LoadedRecording, skips: Counter[Skip]) -> None:
        self.recording = recording
        self.skips = skips
        sampling = recording.manifest.sampling or {}
        self.candidates = _candidates(sampling)
        # What the session asked for (SamplingParams as JSON: false is left out).
        self.asked_prompt_ids = sampling.get("prompt_token_ids") is True
        self.asked_logprobs = sampling.get("logprobs") is True
        self._readable: dict[Path, bool] = {}

    def of_step(self, step: StepView) -> list[TrainerRow]:
        generation = step.generation
        if generation is None:
            raise _SkipError(NO_GENERATION)
        completions = generation.get("completions")
        if not isinstance(completions, list) or not completions:
            raise _SkipError(NO_COMPLETIONS)
        if not all(isinstance(c, dict) for c in completions):
            raise _corrupt("a completion is not a JSON object")
        shared = self._step_tokens(step, generation, completions)
        # The completions sampled with the recorded prompt: the anchor's model call.
        whole_calls = len(completions) % self.candidates == 0
        first = shared.anchor - shared.anchor % self.candidates if whole_calls else shared.anchor
        same_call = range(first, first + self.candidates if whole_calls else first + 1)
        rows: list[TrainerRow] = []
        for index, completion in enumerate(completions):
            if index not in same_call:
                before = whole_calls and index < same_call.start
                self.skips[Skip("completion", EARLIER_ATTEMPT if before else UNKNOWN_CALL)] += 1
                continue
            try:
                rows.append(self._row(step, generation, shared, index, completion))
            except _SkipError as skip:
                self.skips[Skip("completion", str(skip))] += 1
        return rows

    def _step_tokens(
        self, step: StepView, generation: Json, completions: list[Json]
    ) -> _StepTokens:
        prompt_ids = _token_ids(generation.get("prompt_token_ids"), "prompt token ids")
        if not prompt_ids:
            raise _SkipError(NO_PROMPT_IDS_GIVEN if self.asked_prompt_ids else NO_PROMPT_IDS)
        counted = generation.get("prompt_tokens", 0)
        if isinstance(counted, int) and counted and counted != len(prompt_ids):
            raise _corrupt(f"{len(prompt_ids)} prompt token ids where prompt_tokens says {counted}")
        parsed = [bool(c.get("parsed", False)) for c in completions]
        chosen: int | None = None
        if any(parsed):
            # MessageToDict leaves out zeros: no "chosen" means completion 0.
            chosen = generation.get("chosen", 0)
            if not isinstance(chosen, int) or not 0 <= chosen < len(completions):
                raise _corrupt(f"chosen {chosen!r} names no completion")
            if not parsed[chosen]:
                raise _corrupt(f"the chosen completion {chosen} did not parse")
        anchor = chosen if chosen is not None else len(completions) - 1
        return _StepTokens(prompt_ids, self._prompt_images(step, generation), anchor, chosen)

    def _prompt_images(self, step: StepView, generation: Json) -> tuple[PromptImage, ...]:
        named = generation.get("images") or []
        if not isinstance(named, list) or not all(isinstance(i, dict) for i in named):
            raise _corrupt("generation.images is not a list of objects")
        prompt = step.actions.prompt
        if prompt is not None:
            shown = [p.frame_id for m in prompt for p in m.content if isinstance(p, ImagePart)]
            if shown and not named:
                raise _SkipError(IMAGES_UNNAMED)
            if shown != [str(i.get("frame_id", "")) for i in named]:
                raise _corrupt("generation.images do not name the recorded prompt's images")
        return tuple(self._prompt_image(image) for image in named)

    def _prompt_image(self, named: Json) -> PromptImage:
        frame_id = str(named.get("frame_id", ""))
        content_id = str(named.get("content_id", ""))
        width, height = named.get("width", 0), named.get("height", 0)
        if not (isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0):
            raise _corrupt(f"a prompt image of frame {frame_id!r} has no size")
        frame = self.recording.frames.get(frame_id)
        if frame is None:
            raise _SkipError(FRAME_MISSING)
        if not self._is_image(frame.path):
            raise _SkipError(FRAME_UNREADABLE)
        resized = named.get("resized", False) is True
        given = engine_input(resized, (frame.width, frame.height), (width, height))
        return PromptImage(
            frame_id,
            content_id,
            frame.event.file,
            width,
            height,
            dataset_image(self.recording, frame, given.resize),
        )

    def _is_image(self, path: Path) -> bool:
        """The file is an image whose encoded data checks out (PNG: every chunk's CRC),
        without decoding its pixels: a truncated or damaged frame gives no row."""
        known = self._readable.get(path)
        if known is None:
            try:
                with Image.open(path) as opened:
                    opened.verify()
                known = True
            except (OSError, SyntaxError, ValueError):
                known = False
            self._readable[path] = known
        return known

    def _row(
        self, step: StepView, generation: Json, shared: _StepTokens, index: int, completion: Json
    ) -> TrainerRow:
        token_ids = _token_ids(completion.get("token_ids"), "completion token ids")
        logprobs = _logprobs(completion.get("token_logprobs"))
        if not token_ids or not logprobs:
            raise _SkipError(
                NO_COMPLETION_TOKENS_GIVEN if self.asked_logprobs else NO_COMPLETION_TOKENS
            )
        if len(token_ids) != len(logprobs):
            raise _corrupt(f"{len(token_ids)} completion token ids but {len(logprobs)} logprobs")
        recording = self.recording
        manifest = recording.manifest
        return TrainerRow(
            recording_id=recording.recording_id,
            session_id=manifest.session_id,
            task=manifest.task,
            step=step.step,
            completion_index=index,
            chosen=index == shared.chosen,
            parsed=bool(completion.get("parsed", False)),
            prompt_token_ids=shared.prompt_ids,
            completion_token_ids=token_ids,
            completion_logprobs=logprobs,
            completion_text=str(completion.get("text", "")),
            policy_version=_uint(generation.get("policy_version", 0), "policy_version"),
            policy_label=str(generation.get("policy_label", "")),
            versions=_versions(completion.get("versions"), len(token_ids)),
            images=shared.images,
            outcome=recording.outcome,
            reward=recording.reward,
            success=recording.success,
            policy=manifest.policy,
            dialect=manifest.dialect,
            model=manifest.model,
        )


def _candidates(sampling: Json) -> int:
    # SamplingParams.candidates as JSON: missing or 0 means 1.
    value = sampling.get("candidates", 0)
    return value if isinstance(value, int) and value > 0 else 1


def _token_ids(value: Any, what: str) -> tuple[int, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_TOKEN_ID for v in value
    ):
        raise _corrupt(f"{what} are not token ids")
    return tuple(value)


def _logprobs(value: Any) -> tuple[float, ...]:
    # json_format writes NaN and infinities as strings ("-Infinity"); float() reads them.
    if value is None:
        return ()
    try:
        if not isinstance(value, list) or any(isinstance(v, bool) for v in value):
            raise TypeError
        return tuple(float(v) for v in value)
    except (TypeError, ValueError):
        raise _corrupt("completion logprobs are not numbers") from None


def _uint(value: Any, what: str) -> int:
    # A uint64 is a JSON string in MessageToDict's output.
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise _corrupt(f"{what} {value!r} is not a number") from None
    if isinstance(value, bool) or number < 0:
        raise _corrupt(f"{what} {value!r} is not a version")
    return number


def _versions(value: Any, tokens: int) -> tuple[VersionSpan, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise _corrupt("completion versions are not a list of spans")
    spans: list[VersionSpan] = []
    for span in value:
        # Zero fields are left out of the JSON.
        start, end = span.get("start", 0), span.get("end", 0)
        if not (isinstance(start, int) and isinstance(end, int)):
            raise _corrupt("a version span's bounds are not integers")
        try:
            spans.append(VersionSpan(_uint(span.get("version", 0), "version"), start, end))
        except ValueError as error:
            raise _corrupt(str(error)) from None
        if end > tokens:
            raise _corrupt(f"a version span ends at token {end} of {tokens}")
    return tuple(spans)
