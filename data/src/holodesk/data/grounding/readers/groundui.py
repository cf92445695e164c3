"""GroundUI-1K as agent-studio ships it (Hugging Face agent-studio/GroundUI-1K).

Layout: Parquet with columns image (Image feature), instruction, bbox, resolution,
source, platform. `bbox` is [left, top, right, bottom] pixels and agent-studio's
evals/gui_grounding_eval.py counts a hit only with strict inequalities
(left < x < right, top < y < bottom): a point on the border misses, and the few
zero-height boxes the set ships can never be hit (they stay in, as they do there, so
the denominator matches). `resolution` is [width, height], checked against the image.
Breakdowns: platform (web, desktop, mobile) and source. Rows have no id: ours is
`row-<n>` in reading order.
"""

from __future__ import annotations

from pathlib import Path

from holodesk.data.grounding.readers import parquet
from holodesk.data.grounding.readers.layout import (
    Collector,
    box_corners,
    numbers,
    same_size,
    size,
    text,
)
from holodesk.data.grounding.samples import Dataset, GroundingSample

BENCHMARK = "groundui-1k"
COLUMNS = ("image", "instruction", "bbox", "resolution", "source", "platform")


def read(path: Path, *, strict: bool = False) -> Dataset:
    """Read one .parquet file or a folder of them."""
    return parquet.read_dataset(BENCHMARK, path, COLUMNS, _sample, strict=strict)


def _sample(row: parquet.Row, sample_id: str, collector: Collector) -> GroundingSample:
    values = row.values
    instruction = text(values, "instruction")
    bbox = numbers(values, "bbox", 4)
    declared = size(values, "resolution")
    groups = {"platform": text(values, "platform"), "source": text(values, "source")}
    ref, image = parquet.image(row, "image", collector)
    same_size(declared, image, "resolution")
    return GroundingSample(
        id=sample_id,
        image=ref,
        instruction=instruction,
        target=box_corners(bbox, "bbox", image, edges="strict"),
        width=image.width,
        height=image.height,
        groups=groups,
    )
