"""WebClick as H Company ships it (Hugging Face Hcompany/WebClick, split test).

Layout: Parquet (`data/test-*.parquet`) with columns image (Image feature),
instruction, bbox, bucket. `bbox` is [x1, y1, x2, y2] normalised to [0, 1]; it is
turned into pixels of the row's own image here, edges included. No official scoring
script is published; the card says it follows ScreenSpot's format, whose rule is a
point inside the box, edges included. Breakdown: bucket (agentbrowse, humanbrowse,
calendars). Rows have no id: ours is `row-<n>` in reading order.
"""

from __future__ import annotations

from pathlib import Path

from holodesk.data.grounding.readers import parquet
from holodesk.data.grounding.readers.layout import (
    Collector,
    box_normalised,
    numbers,
    text,
)
from holodesk.data.grounding.samples import Dataset, GroundingSample

BENCHMARK = "webclick"
COLUMNS = ("image", "instruction", "bbox", "bucket")


def read(path: Path, *, strict: bool = False) -> Dataset:
    """Read one .parquet file or a folder of them."""
    return parquet.read_dataset(BENCHMARK, path, COLUMNS, _sample, strict=strict)


def _sample(row: parquet.Row, sample_id: str, collector: Collector) -> GroundingSample:
    values = row.values
    instruction = text(values, "instruction")
    bbox = numbers(values, "bbox", 4)
    bucket = text(values, "bucket")
    ref, image = parquet.image(row, "image", collector)
    return GroundingSample(
        id=sample_id,
        image=ref,
        instruction=instruction,
        target=box_normalised(bbox, "bbox", image),
        width=image.width,
        height=image.height,
        groups={"bucket": bucket},
    )
