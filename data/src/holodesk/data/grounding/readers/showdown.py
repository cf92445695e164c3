"""Showdown clicks as General Agents ship it (generalagents/showdown-clicks, dev split).

Layout: `showdown-clicks-dev/data.csv` with columns id, image, instruction, x1, y1, x2,
y2 (others, such as recording_id, ignored), and the frames the `image` column names,
relative to the CSV's folder (`frames/<session>/<n>.webp`), as the authors' eval.py
joins them. The target is the pixel box x1..x2, y1..y2 with edges included (their
`is_point_in_bbox`: x1 <= x <= x2 and y1 <= y <= y2). Where the CSV has `width` and
`height` columns they are checked against the image; their harness does not read
them. The published figure is overall accuracy with a 95% percentile bootstrap
interval (scipy.stats.bootstrap); there is no per-group table.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from pathlib import Path

from holodesk.data.grounding.readers.layout import (
    Collector,
    SampleError,
    box_corners,
    image_in,
    image_ref,
    same_size,
)
from holodesk.data.grounding.samples import Dataset, GroundingSample, LayoutError, Problem

BENCHMARK = "showdown"
CSV_NAME = "data.csv"
COLUMNS = ("id", "image", "instruction", "x1", "y1", "x2", "y2")
SIZE_COLUMNS = ("width", "height")


def read(path: Path, *, strict: bool = False) -> Dataset:
    """Read the folder holding data.csv (and frames/), or the CSV itself."""
    file = path / CSV_NAME if path.is_dir() else path
    if not file.is_file():
        raise LayoutError(Problem(str(path), None, f"no {CSV_NAME} here"))
    root = file.parent
    collector = Collector(BENCHMARK, root, strict=strict)
    data = collector.annotation(file)
    try:
        reader = csv.DictReader(io.StringIO(data.decode("utf-8-sig")))
        header = reader.fieldnames or []
        rows = list(reader)
    except (UnicodeDecodeError, csv.Error) as error:
        raise LayoutError(Problem(file.name, None, f"not a readable CSV: {error}")) from error
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise LayoutError(
            Problem(file.name, None, f"missing column(s) {', '.join(missing)}; it has {header}")
        )
    for line, row in enumerate(rows, start=2):
        sample_id = (row.get("id") or "").strip() or f"line-{line}"
        where = f"{file.name} line {line}"
        try:
            collector.add(_sample(row, sample_id, root, collector), where)
        except SampleError as bad:
            collector.problem(where, sample_id, str(bad))
    return collector.dataset()


def _sample(
    row: Mapping[str, str | None], sample_id: str, root: Path, collector: Collector
) -> GroundingSample:
    filename = _text(row, "image")
    instruction = _text(row, "instruction")
    corners = [_number(row, c) for c in ("x1", "y1", "x2", "y2")]
    declared = None
    if all(row.get(c) is not None for c in SIZE_COLUMNS):
        declared = (_whole(row, "width"), _whole(row, "height"))
    image_path = image_in(root, filename)
    if not image_path.is_file() and image_in(root / "frames", filename).is_file():
        image_path = image_in(root / "frames", filename)
    image = collector.image_file(image_path)
    if declared is not None:
        same_size(declared, image, "width, height")
    return GroundingSample(
        id=sample_id,
        image=image_ref(image_path),
        instruction=instruction,
        target=box_corners(corners, "x1, y1, x2, y2", image),
        width=image.width,
        height=image.height,
        groups={},
    )


def _text(row: Mapping[str, str | None], name: str) -> str:
    value = (row.get(name) or "").strip()
    if not value:
        raise SampleError(f"column {name!r} is empty")
    return value


def _number(row: Mapping[str, str | None], name: str) -> float:
    value = _text(row, name)
    try:
        number = float(value)
    except ValueError:
        raise SampleError(f"column {name!r} should be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise SampleError(f"column {name!r} is not a finite number: {value!r}")
    return number


def _whole(row: Mapping[str, str | None], name: str) -> int:
    number = _number(row, name)
    if number != int(number) or number <= 0:
        raise SampleError(
            f"column {name!r} should be a positive whole number, got {row.get(name)!r}"
        )
    return int(number)
