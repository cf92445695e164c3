"""`holodesk export --format trainer`: the rows of trainer_rows.py as one Parquet file.

Why Parquet with the images embedded: a trainer reads rows in any order across
workers, so each row carries everything one training sample needs (token ids,
logprobs, loss mask and the pixels its image placeholders stand for) in the layout
Hugging Face datasets reads as an Image feature ({bytes, path}), as the SFT Parquet
export does. Rows are written in batches of bounded image bytes: a step sampled n
times repeats its images n times, so a whole recording could be large.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from holodesk.data.stepview import Json, LoadedRecording
from holodesk.data.trainer_rows import Skip, TrainerRow, trainer_rows

if TYPE_CHECKING:
    import pyarrow as pa

# Image bytes buffered before a batch of rows is written (one row group).
BATCH_IMAGE_BYTES = 128 << 20


def trainer_schema() -> pa.Schema:
    import pyarrow as pa

    span = pa.struct([("version", pa.int64()), ("start", pa.int32()), ("end", pa.int32())])
    size = pa.struct([("width", pa.int32()), ("height", pa.int32())])
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    fields: list[tuple[str, pa.DataType]] = [
        ("recording_id", pa.string()),
        ("session_id", pa.string()),
        ("task", pa.string()),
        ("step", pa.int32()),
        ("completion_index", pa.int32()),
        ("chosen", pa.bool_()),
        ("parsed", pa.bool_()),
        ("prompt_token_ids", pa.list_(pa.int32())),
        ("completion_token_ids", pa.list_(pa.int32())),
        ("completion_logprobs", pa.list_(pa.float64())),
        ("loss_mask", pa.list_(pa.int8())),
        ("completion_text", pa.string()),
        ("policy_version", pa.int64()),
        ("policy_label", pa.string()),
        ("versions", pa.list_(span)),
        ("mixed_versions", pa.bool_()),
        ("image_content_ids", pa.list_(pa.string())),
        ("image_frame_ids", pa.list_(pa.string())),
        ("image_files", pa.list_(pa.string())),
        ("image_sizes", pa.list_(size)),
        ("images", pa.list_(image)),
        ("outcome", pa.string()),
        ("reward", pa.float64()),
        ("success", pa.bool_()),
        ("policy", pa.string()),
        ("dialect", pa.string()),
        ("model", pa.string()),
    ]
    return pa.schema(fields)


def write_trainer_parquet(
    recordings: Iterable[LoadedRecording],
    dataset: Path,
    skips: Counter[Skip],
    on_recording: Callable[[LoadedRecording, int, Counter[Skip]], None] | None = None,
) -> tuple[int, int]:
    """Write every row of `recordings` to `dataset` (atomically); (rows, distinct images).
    `on_recording` hears each recording's row count and its own skips."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = trainer_schema()
    temporary = dataset.with_name(f".{dataset.name}.tmp")
    total = 0
    images: set[str] = set()
    with pq.ParquetWriter(temporary, schema) as writer:
        for recording in recordings:
            own: Counter[Skip] = Counter()
            batch = _Batch()
            rows = 0
            for row in trainer_rows(recording, own):
                batch.add(row)
                rows += 1
                if batch.image_bytes >= BATCH_IMAGE_BYTES:
                    writer.write_table(pa.Table.from_pylist(batch.take(), schema=schema))
            if batch.rows:
                writer.write_table(pa.Table.from_pylist(batch.take(), schema=schema))
            images.update(batch.seen)
            total += rows
            skips.update(own)
            if on_recording is not None:
                on_recording(recording, rows, own)
    os.replace(temporary, dataset)
    return total, len(images)


class _Batch:
    """Rows waiting to be written, each image encoded once per recording."""

    def __init__(self) -> None:
        self.rows: list[Json] = []
        self.image_bytes = 0
        self._encoded: dict[str, bytes] = {}

    @property
    def seen(self) -> set[str]:
        return set(self._encoded)

    def add(self, row: TrainerRow) -> None:
        columns = row.columns()
        pixels = []
        for image in row.images:
            name = image.pixels.name
            if name not in self._encoded:
                self._encoded[name] = image.pixels.encoded()
            data = self._encoded[name]
            self.image_bytes += len(data)
            pixels.append({"bytes": data, "path": name})
        columns["images"] = pixels
        self.rows.append(columns)

    def take(self) -> list[Json]:
        rows, self.rows, self.image_bytes = self.rows, [], 0
        return rows
