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

This module picks the recordings (ExportFilter) and writes the rows; which steps
give a row and what it holds is export_rows.py.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from holodesk.data.export_rows import examples, skipped_steps, why_no_rows
from holodesk.data.format import OUTCOMES, RecordingError
from holodesk.data.stepview import Json, LoadedRecording
from holodesk.data.trainer_export import write_trainer_parquet
from holodesk.data.trainer_rows import Skip

if TYPE_CHECKING:
    import pyarrow as pa

# jsonl and parquet: SFT prompt/response pairs; trainer: token rows for RL (trainer_rows.py).
ExportFormat = Literal["jsonl", "parquet", "trainer"]
FORMATS: tuple[ExportFormat, ...] = ("jsonl", "parquet", "trainer")
DATASET_FILES: dict[ExportFormat, str] = {
    "jsonl": "data.jsonl",
    "parquet": "data.parquet",
    "trainer": "trainer.parquet",
}


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


@dataclass
class ExportSummary:
    dataset: Path
    rows: int = 0
    images: int = 0
    recordings: int = 0
    # (recording id, why it or a step of it was left out)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    # The trainer format's steps and completions left out, counted by reason.
    skip_counts: Counter[Skip] = field(default_factory=Counter)


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
    # The SFT formats name each step they leave out; the trainer format counts them.
    kept = _kept(paths, selection, summary, name_steps=export_format != "trainer")
    if export_format == "jsonl":
        _write_jsonl(kept, dataset, summary, on_recording)
    elif export_format == "parquet":
        _write_parquet(kept, dataset, summary, on_recording)
    else:
        _write_trainer(kept, dataset, summary, on_recording)
    return summary


def _kept(
    paths: Sequence[Path], selection: ExportFilter, summary: ExportSummary, *, name_steps: bool
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
        if name_steps:
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
    _need_pyarrow()
    import pyarrow as pa
    import pyarrow.parquet as pq

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


def _need_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise ExportError(
            "Parquet export needs pyarrow: install holodesk-data[parquet] (or use jsonl)"
        ) from None


def _write_trainer(
    recordings: Iterable[LoadedRecording],
    dataset: Path,
    summary: ExportSummary,
    on_recording: Callable[[LoadedRecording, int], None] | None,
) -> None:
    _need_pyarrow()

    def heard(recording: LoadedRecording, rows: int, skips: Counter[Skip]) -> None:
        if rows == 0:
            summary.skipped.append((recording.recording_id, why_no_trainer_rows(skips)))
        if on_recording is not None:
            on_recording(recording, rows)

    summary.rows, summary.images = write_trainer_parquet(
        recordings, dataset, summary.skip_counts, heard
    )


def why_no_trainer_rows(skips: Counter[Skip]) -> str:
    """Why a recording gave no trainer rows: its own skips, counted."""
    if not skips:
        return "no rows: no model step was recorded"
    return "no rows: " + "; ".join(f"{count} {skip}" for skip, count in sorted(skips.items()))
