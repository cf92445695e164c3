"""ScreenSpot-Pro as its authors ship it (Hugging Face likaixin/ScreenSpot-Pro).

Layout: `annotations/<application>_<platform>.json` (each a list of {id, img_filename,
img_size, bbox, instruction, group, platform, application, ui_type, ...}) and
`images/` (img_filename is relative to it). `bbox` is [x1, y1, x2, y2] in the pixels
of `img_size`; the official script divides both box and point by img_size and
compares with edges included, which is the same verdict in pixels once img_size is
checked against the image. Breakdowns: group (Dev, Creative, CAD, Scientific, Office,
OS) x text/icon, application, ui_type.
"""

from __future__ import annotations

from pathlib import Path

from holodesk.data.grounding.readers.layout import (
    Collector,
    SampleError,
    box_corners,
    field,
    image_in,
    image_ref,
    json_records,
    numbers,
    record_of,
    same_size,
    size,
    text,
)
from holodesk.data.grounding.samples import Dataset, GroundingSample, LayoutError, Problem

BENCHMARK = "screenspot-pro"


def read(path: Path, *, strict: bool = False) -> Dataset:
    """Read the data set's folder (holding annotations/ and images/), or one
    `annotations/<app>.json` of it (one application)."""
    one = path.is_file() and path.suffix == ".json" and path.parent.name == "annotations"
    if one:
        path, files = path.parent.parent, [path]
    elif not path.is_dir():
        raise LayoutError(
            Problem(str(path), None, "ScreenSpot-Pro is a folder with annotations/ and images/")
        )
    annotations, images = path / "annotations", path / "images"
    for folder in (annotations, images):
        if not folder.is_dir():
            raise LayoutError(Problem(str(path), None, f"no {folder.name}/ folder here"))
    if not one:
        files = sorted(annotations.glob("*.json"))
    if not files:
        raise LayoutError(Problem(f"{path.name}/annotations", None, "holds no .json file"))
    collector = Collector(BENCHMARK, path, strict=strict)
    for file in files:
        where = collector.where(file)
        for index, item in enumerate(json_records(collector, file)):
            sample_id = _id(item, file, index)
            try:
                collector.add(_sample(item, sample_id, images, collector), where)
            except SampleError as bad:
                collector.problem(where, sample_id, str(bad))
    return collector.dataset()


def _id(item: object, file: Path, index: int) -> str:
    """The record's own id when it has one, else `<file stem>-<index>` to name it."""
    if isinstance(item, dict) and isinstance(item.get("id"), str | int):
        return str(item["id"])
    return f"{file.stem}-{index}"


def _sample(item: object, sample_id: str, images: Path, collector: Collector) -> GroundingSample:
    record = record_of(item)
    raw_id = field(record, "id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        raise SampleError(f"field 'id' should be a string or an integer, got {raw_id!r}")
    filename = text(record, "img_filename")
    declared = size(record, "img_size")
    bbox = numbers(record, "bbox", 4)
    instruction = text(record, "instruction")
    groups = {key: text(record, key) for key in ("group", "platform", "application", "ui_type")}
    image_path = image_in(images, filename)
    image = collector.image_file(image_path)
    same_size(declared, image, "img_size")
    return GroundingSample(
        id=sample_id,
        image=image_ref(image_path),
        instruction=instruction,
        target=box_corners(bbox, "bbox", image),
        width=image.width,
        height=image.height,
        groups=groups,
    )
