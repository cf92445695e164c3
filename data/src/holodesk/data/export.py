"""Recordings -> a supervised fine-tuning dataset of the dialect's prompt/response pairs.

One row per step whose actions event has a prompt and a chosen candidate: the
prompt exactly as handed to the engine, then the chosen completion as the
assistant turn, in the common VLM SFT layout::

    {"messages": [{"role": "user", "content": [{"type": "image", "image": "images/a.png"},
                                               {"type": "text", "text": "..."}]},
                  {"role": "assistant", "content": [{"type": "text", "text": "<raw output>"}]}],
     "images": ["images/a.png"], "recording_id": ..., "step": ..., "logprobs": [...], ...}

Each image is the frame resized to the size the model saw (the prompt records
it), with the daemon's own filter, so the dataset's pixels and the completion's
coordinates agree. JSONL writes the images beside it (hard links when the
recorded file is used as is); Parquet embeds them as {bytes, path} structs, the
layout Hugging Face datasets reads as an Image feature. JSONL is strict JSON, so a
non-finite logprob (-inf happens) is written as null there; Parquet keeps it.
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from PIL import Image

from holodesk.data.format import (
    OUTCOMES,
    ImagePart,
    PromptMessage,
    RecordingError,
    TextPart,
    safe_name,
)
from holodesk.data.stepview import FrameRef, Json, LoadedRecording, StepView

if TYPE_CHECKING:
    import pyarrow as pa

ExportFormat = Literal["jsonl", "parquet"]
FORMATS: tuple[ExportFormat, ...] = ("jsonl", "parquet")
IMAGES_DIR = "images"
DATASET_FILES: dict[ExportFormat, str] = {"jsonl": "data.jsonl", "parquet": "data.parquet"}
# The manifest's principal in a recording the client kept itself (client/recording.py).
CLIENT_PRINCIPAL = "client"


class ExportError(RecordingError):
    """The export cannot be done as asked (bad filter, existing output, missing pyarrow)."""


@dataclass(frozen=True)
class ExportFilter:
    """Which recordings go into the dataset; an empty set admits any value."""

    outcomes: frozenset[str] = frozenset()
    min_reward: float | None = None
    policies: frozenset[str] = frozenset()
    dialects: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = sorted(self.outcomes - set(OUTCOMES))
        if unknown:
            raise ExportError(
                f"unknown outcome(s) {', '.join(unknown)}: choose from {', '.join(OUTCOMES)}"
            )

    def rejects(self, recording: LoadedRecording) -> str:
        """Why the recording is left out, or '' to keep it."""
        manifest = recording.manifest
        outcome = recording.outcome
        if self.outcomes and outcome not in self.outcomes:
            return f"outcome {outcome or 'none (never ended)'}"
        if self.min_reward is not None:
            reward = recording.reward
            if reward is None:
                return "no reward"
            if reward < self.min_reward:
                return f"reward {reward:g} < {self.min_reward:g}"
        if self.policies and manifest.policy not in self.policies:
            return f"policy {manifest.policy!r}"
        if self.dialects and (manifest.dialect or "") not in self.dialects:
            return f"dialect {manifest.dialect!r}"
        return ""


@dataclass(frozen=True)
class DatasetImage:
    """One image of the dataset: its name there, and how to make it from the recording."""

    name: str
    source: FrameRef
    # Resize to this size (the model's) first; None: the recorded file as is.
    resize: tuple[int, int] | None

    def encoded(self) -> bytes:
        if self.resize is None:
            return self.source.path.read_bytes()
        buffer = io.BytesIO()
        self._resized().save(buffer, format="PNG")
        return buffer.getvalue()

    def write_into(self, directory: Path) -> bool:
        """Materialize under `directory`; False when it is already there (deduplicated)."""
        target = directory / self.name
        if target.exists():
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        if self.resize is None:
            try:
                os.link(self.source.path, target)
            except OSError:  # another file system, or no hard links there
                shutil.copyfile(self.source.path, target)
        else:
            temporary = target.with_name(f".{target.name}.tmp")
            self._resized().save(temporary, format="PNG")
            os.replace(temporary, target)
        return True

    def _resized(self) -> Image.Image:
        assert self.resize is not None
        with Image.open(self.source.path) as opened:
            image = opened.convert("RGB")
        # Bicubic, as the daemon resizes frames for the model (dialects/images.py).
        return image.resize(self.resize, Image.Resampling.BICUBIC)


@dataclass(frozen=True)
class Example:
    """One dataset row."""

    messages: list[Json]
    images: list[DatasetImage]
    columns: Json

    def row(self) -> Json:
        return {"messages": self.messages, "images": [i.name for i in self.images], **self.columns}


@dataclass
class ExportSummary:
    dataset: Path
    rows: int = 0
    images: int = 0
    recordings: int = 0
    # (recording id, why it or a step of it was left out)
    skipped: list[tuple[str, str]] = field(default_factory=list)


class _SkipStepError(Exception):
    """A step that has a prompt and a completion but cannot become a row."""


def examples(recording: LoadedRecording) -> Iterator[Example]:
    """The rows of one recording; steps without a prompt or a chosen candidate have none."""
    for step in recording.steps():
        try:
            example = _example(recording, step)
        except _SkipStepError:
            continue
        if example is not None:
            yield example


def skipped_steps(recording: LoadedRecording) -> list[tuple[int, str]]:
    """Steps with a prompt and a completion that still give no row, and why."""
    reasons: list[tuple[int, str]] = []
    for step in recording.steps():
        try:
            _example(recording, step)
        except _SkipStepError as skip:
            reasons.append((step.step, str(skip)))
    return reasons


def why_no_rows(recording: LoadedRecording) -> str:
    """Why a recording kept by the filter still gives no rows, in words for its user.

    Rows are the model's prompt/response pairs, so a session can be recorded in full
    and give none: it never got to a step, or its policy is not a model (the OCR
    baseline and scripted policies record actions, never a prompt).
    """
    steps = recording.steps()
    prompted = [step for step in steps if step.actions.prompt is not None]
    if not prompted and recording.manifest.principal == CLIENT_PRINCIPAL:
        return (
            "no rows: a client's own recording (holodesk run --record) holds no prompts; "
            "export the daemon's recording of the session (holodeskd --record on)"
        )
    if not steps:
        frames = "no frames and " if not recording.frames else ""
        return f"no rows: {frames}no actions were recorded (the session ended before a step)"
    if not prompted:
        policy = recording.manifest.policy or "?"
        return (
            f"no rows: none of its {len(steps)} step(s) recorded a prompt "
            f"(policy {policy!r} is not a model, or its engine does not report prompts)"
        )
    if all(step.chosen_completion() is None for step in prompted):
        return f"no rows: none of its {len(prompted)} prompted step(s) recorded the model's output"
    if not recording.frames:
        return "no rows: no frames were recorded for its prompts' images"
    return "no rows: every step with a prompt and an output was left out (reasons above)"


def _example(recording: LoadedRecording, step: StepView) -> Example | None:
    prompt = step.actions.prompt
    completion = step.chosen_completion()
    if prompt is None or completion is None:
        return None
    images: dict[str, DatasetImage] = {}
    messages: list[Json] = []
    for message in prompt:
        content: list[Json] = []
        for part in message.content:
            if isinstance(part, TextPart):
                content.append({"type": "text", "text": part.text})
            elif isinstance(part, ImagePart):
                image = _dataset_image(recording, part)
                images.setdefault(image.name, image)
                content.append({"type": "image", "image": image.name})
            else:
                raise _SkipStepError(f"a prompt part of unknown type {part.type!r}")
        messages.append(_with_tool_fields({"role": message.role, "content": content}, message))
    text = str(completion.get("text") or "")
    messages.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
    logprobs = _floats(completion.get("token_logprobs"))
    manifest = recording.manifest
    columns: Json = {
        "recording_id": recording.recording_id,
        "session_id": manifest.session_id,
        "step": step.step,
        "task": manifest.task,
        "outcome": recording.outcome,
        "reward": recording.reward,
        "success": recording.success,
        "policy": manifest.policy,
        "dialect": manifest.dialect,
        "model": manifest.model,
        "logprobs": logprobs,
        "token_ids": _ints(completion.get("token_ids")),
        # MessageToDict leaves out zeros: with logprobs present, a missing sum is 0.0.
        "cumulative_logprob": (
            float(completion.get("cumulative_logprob", 0.0)) if logprobs is not None else None
        ),
    }
    # The images in order of first appearance, each once.
    return Example(messages, list(images.values()), columns)


def _dataset_image(recording: LoadedRecording, part: ImagePart) -> DatasetImage:
    frame = recording.frames.get(part.frame_id)
    if frame is None:
        raise _SkipStepError(f"the prompt's frame {part.frame_id!r} was not recorded")
    stem = _safe(f"{recording.recording_id}-{frame.path.stem}")
    seen = (part.width, part.height)
    if part.width <= 0 or part.height <= 0 or seen == (frame.width, frame.height):
        return DatasetImage(f"{IMAGES_DIR}/{stem}{frame.path.suffix}", frame, None)
    return DatasetImage(f"{IMAGES_DIR}/{stem}-{part.width}x{part.height}.png", frame, seen)


def _safe(name: str) -> str:
    # Up to 240 characters: a recording id and a frame file's stem, well under the
    # 255 of most file systems.
    return safe_name(name, 240, empty="image")


def _floats(value: Any) -> list[float] | None:
    # json_format writes NaN and infinities as strings; float() reads them back.
    if not isinstance(value, list) or not value:
        return None
    return [float(v) for v in value]


def _ints(value: Any) -> list[int] | None:
    if not isinstance(value, list) or not value:
        return None
    return [int(v) for v in value]


# -- writing ----------------------------------------------------------------------------


def export(
    paths: Sequence[Path],
    out_dir: Path,
    export_format: ExportFormat,
    selection: ExportFilter | None = None,
    *,
    overwrite: bool = False,
    on_recording: Callable[[LoadedRecording, int], None] | None = None,
) -> ExportSummary:
    """Write the dataset of these recording directories into `out_dir`."""
    if export_format not in FORMATS:
        raise ExportError(f"unknown format {export_format!r}: choose from {', '.join(FORMATS)}")
    selection = selection or ExportFilter()
    out_dir.mkdir(parents=True, exist_ok=True)
    dataset = out_dir / DATASET_FILES[export_format]
    if dataset.exists() and not overwrite:
        raise ExportError(f"{dataset} exists; pass overwrite (--overwrite) to replace it")
    summary = ExportSummary(dataset)
    kept = _kept(paths, selection, summary)
    if export_format == "jsonl":
        _write_jsonl(kept, dataset, summary, on_recording)
    else:
        _write_parquet(kept, dataset, summary, on_recording)
    return summary


def _kept(
    paths: Sequence[Path], selection: ExportFilter, summary: ExportSummary
) -> Iterator[LoadedRecording]:
    for path in paths:
        try:
            recording = LoadedRecording.load(path)
        except RecordingError as error:
            # One damaged or newer recording must not sink a dataset of thousands.
            summary.skipped.append((Path(path).name, f"unreadable: {error}"))
            continue
        reason = selection.rejects(recording)
        if reason:
            summary.skipped.append((recording.recording_id, reason))
            continue
        summary.recordings += 1
        for step, why in skipped_steps(recording):
            summary.skipped.append((recording.recording_id, f"step {step}: {why}"))
        yield recording


def _write_jsonl(
    recordings: Iterable[LoadedRecording],
    dataset: Path,
    summary: ExportSummary,
    on_recording: Callable[[LoadedRecording, int], None] | None,
) -> None:
    temporary = dataset.with_name(f".{dataset.name}.tmp")
    with open(temporary, "w", encoding="utf-8") as out:
        for recording in recordings:
            rows = 0
            for example in examples(recording):
                for image in example.images:
                    summary.images += image.write_into(dataset.parent)
                row = _strict_json(example.row())
                out.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
                rows += 1
            summary.rows += rows
            _say_why_if_empty(recording, rows, summary)
            if on_recording is not None:
                on_recording(recording, rows)
    os.replace(temporary, dataset)


def _say_why_if_empty(recording: LoadedRecording, rows: int, summary: ExportSummary) -> None:
    if rows == 0:
        summary.skipped.append((recording.recording_id, why_no_rows(recording)))


def _strict_json(row: Json) -> Json:
    # JSON has no infinities or NaN (a -inf logprob is possible): they become null.
    for key in ("logprobs", "cumulative_logprob", "reward"):
        value = row.get(key)
        if isinstance(value, list):
            row[key] = [v if math.isfinite(v) else None for v in value]
        elif isinstance(value, float) and not math.isfinite(value):
            row[key] = None
    return row


def parquet_schema() -> pa.Schema:
    import pyarrow as pa

    part = pa.struct([("type", pa.string()), ("text", pa.string()), ("image", pa.string())])
    function = pa.struct([("name", pa.string()), ("arguments", pa.string())])
    call = pa.struct([("id", pa.string()), ("type", pa.string()), ("function", function)])
    message = pa.struct(
        [
            ("role", pa.string()),
            ("content", pa.list_(part)),
            ("tool_calls", pa.list_(call)),
            ("tool_call_id", pa.string()),
        ]
    )
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    return pa.schema(
        [
            ("messages", pa.list_(message)),
            ("images", pa.list_(image)),
            ("recording_id", pa.string()),
            ("session_id", pa.string()),
            ("step", pa.int32()),
            ("task", pa.string()),
            ("outcome", pa.string()),
            ("reward", pa.float64()),
            ("success", pa.bool_()),
            ("policy", pa.string()),
            ("dialect", pa.string()),
            ("model", pa.string()),
            ("logprobs", pa.list_(pa.float64())),
            ("token_ids", pa.list_(pa.int64())),
            ("cumulative_logprob", pa.float64()),
        ]
    )


def _write_parquet(
    recordings: Iterable[LoadedRecording],
    dataset: Path,
    summary: ExportSummary,
    on_recording: Callable[[LoadedRecording, int], None] | None,
) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ExportError(
            "Parquet export needs pyarrow: install holodesk-data[parquet] (or use jsonl)"
        ) from None
    schema = parquet_schema()
    temporary = dataset.with_name(f".{dataset.name}.tmp")
    seen: set[str] = set()
    # One row group per recording bounds memory to one recording's images.
    with pq.ParquetWriter(temporary, schema) as writer:
        for recording in recordings:
            encoded: dict[str, bytes] = {}
            rows: list[Json] = []
            for example in examples(recording):
                for image in example.images:
                    if image.name not in encoded:
                        encoded[image.name] = image.encoded()
                row = example.row()
                row["messages"] = [_parquet_message(m) for m in example.messages]
                row["images"] = [{"bytes": encoded[i.name], "path": i.name} for i in example.images]
                rows.append(row)
            seen.update(encoded)
            if rows:
                writer.write_table(pa.Table.from_pylist(rows, schema=schema))
            summary.rows += len(rows)
            _say_why_if_empty(recording, len(rows), summary)
            if on_recording is not None:
                on_recording(recording, len(rows))
    summary.images = len(seen)
    os.replace(temporary, dataset)


def _with_tool_fields(entry: Json, message: PromptMessage) -> Json:
    """The message's tool calls in the OpenAI chat form trainers read
    (`tool_calls: [{id, type: function, function: {name, arguments}}]`, `tool_call_id`)."""
    if message.tool_calls:
        entry["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    if message.tool_call_id:
        entry["tool_call_id"] = message.tool_call_id
    return entry


def _parquet_message(message: Json) -> Json:
    # One struct type for every part: the field a part does not use is null.
    return {
        "role": message["role"],
        "content": [
            {"type": c["type"], "text": c.get("text"), "image": c.get("image")}
            for c in message["content"]
        ],
        "tool_calls": message.get("tool_calls") or None,
        "tool_call_id": message.get("tool_call_id") or None,
    }
