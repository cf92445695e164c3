"""Rows of the Parquet benchmarks (GroundUI-1K, WebClick) as Hugging Face ships them.

A data set is one `.parquet` file or a folder of them (`data/test-00000-of-00002.parquet`
...), read in name order, a batch at a time. Images are Hugging Face Image features: a
struct {bytes, path}; the bytes are the image. pyarrow is the optional `parquet` extra
of holodesk-data, imported only here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from holodesk.data.grounding.readers.layout import Collector, ImageInfo, SampleError
from holodesk.data.grounding.samples import (
    Dataset,
    GroundingSample,
    ImageRef,
    LayoutError,
    Problem,
)

BATCH_ROWS = 64


@dataclass(frozen=True)
class Row:
    """One Parquet row and where it is: `<file> row <n>` in messages."""

    file: Path
    index: int  # within its file
    number: int  # across the data set, in reading order: the sample id
    values: Mapping[str, Any]

    @property
    def where(self) -> str:
        return f"{self.file.name} row {self.index}"


# Makes one sample of a row (its id given); raises SampleError for a bad row.
SampleMaker = Callable[[Row, str, Collector], GroundingSample]


def read_dataset(
    benchmark: str, path: Path, columns: Sequence[str], make: SampleMaker, *, strict: bool
) -> Dataset:
    """A Parquet benchmark's data set: one .parquet file or a folder of them, each row
    a sample `row-<n>` (in reading order) unless `make` finds it broken; `columns[0]` is
    the image column (hashed when read), the others go into the content hash here."""
    root = path if path.is_dir() else path.parent
    collector = Collector(benchmark, root, strict=strict)
    for row in rows(path, columns, collector):
        sample_id = f"row-{row.number}"
        try:
            digest_fields(row, columns[1:], collector)
            collector.add(make(row, sample_id, collector), row.where)
        except SampleError as bad:
            collector.problem(row.where, sample_id, str(bad))
    return collector.dataset()


def files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise LayoutError(Problem(str(path), None, "no such file or folder"))
    found = sorted(path.rglob("*.parquet"))
    if not found:
        raise LayoutError(Problem(str(path), None, "holds no .parquet file"))
    return found


def rows(path: Path, columns: Sequence[str], collector: Collector) -> Iterator[Row]:
    """Every row of every file, after checking each file has the layout's columns."""
    try:
        import pyarrow.parquet as pq
    except ImportError as error:
        raise LayoutError(
            Problem(
                str(path),
                None,
                "reading Parquet needs pyarrow: install holodesk-data[parquet] "
                "(in this repository: uv sync --extra parquet)",
            )
        ) from error
    number = 0
    for file in files(path):
        where = collector.where(file)
        try:
            table = pq.ParquetFile(file)
        except Exception as error:  # pyarrow raises several kinds for a bad file
            problem = Problem(where, None, f"not a readable Parquet file: {error}")
            raise LayoutError(problem) from error
        names = table.schema_arrow.names
        missing = [c for c in columns if c not in names]
        if missing:
            raise LayoutError(
                Problem(
                    where,
                    None,
                    f"missing column(s) {', '.join(missing)}; it has {', '.join(names)}",
                )
            )
        index = 0
        for batch in table.iter_batches(batch_size=BATCH_ROWS, columns=list(columns)):
            for values in batch.to_pylist():
                yield Row(file=file, index=index, number=number, values=values)
                index += 1
                number += 1


def image(row: Row, column: str, collector: Collector) -> tuple[ImageRef, ImageInfo]:
    """The row's image bytes, checked with Pillow, and a reference that keeps them."""
    value = row.values.get(column)
    data = value.get("bytes") if isinstance(value, dict) else value
    if not isinstance(data, bytes) or not data:
        kind = "null" if data is None else type(data).__name__
        raise SampleError(f"column {column!r} holds no image bytes (got {kind})")
    label = f"{row.where} column {column!r}"
    info = collector.image_bytes(data, label)
    return ImageRef.inline(data, label), info


def digest_fields(row: Row, columns: Sequence[str], collector: Collector) -> None:
    """Add a row's non-image fields to the content hash (its image is hashed when read)."""
    fields = {c: row.values.get(c) for c in columns}
    collector.digest("row", row.where, json.dumps(fields, sort_keys=True, default=str).encode())
