"""OSWorld-G as its authors ship it (xlang-ai/OSWorld-G, `benchmark/`).

Layout: `OSWorld-G.json` (or `OSWorld-G_refined.json`: same samples, reworded
instructions) beside `images/`; each sample {id, image_path, image_size, instruction,
box_type, box_coordinates, GUI_types}. By box_type:
- "bbox": box_coordinates is [x, y, w, h] pixels, edges included;
- "polygon": a flat vertex list [x1, y1, x2, y2, ...]; inside by ray casting;
- "refusal": the element is not there; only an answer of "absent" is right.
Accuracy is over all samples, refusals included.

Categories (text_matching, element_recognition, layout_understanding,
fine_grained_manipulation, refusal) come from `classification_result.json` beside the
annotations, as OSWorld-G's own evaluation reads them ({"classified": {category:
[{"id": ...}, ...]}}); a sample may sit in several and counts in each; one in none is
"unclassified", as there. Without that file, `buckets.json` ({category: [GUI type,
...]}) is used to map each sample's GUI_types; without either, every sample is
"unclassified" and the breakdown says only that.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from holodesk.data.grounding.readers.layout import (
    Collector,
    SampleError,
    box_xywh,
    field,
    image_in,
    image_ref,
    json_records,
    numbers,
    polygon,
    record_of,
    same_size,
    size,
    text,
)
from holodesk.data.grounding.samples import Dataset, GroundingSample, LayoutError, Problem
from holodesk.data.grounding.targets import Refusal, Target

BENCHMARK = "osworld-g"
ANNOTATIONS = ("OSWorld-G.json", "OSWorld-G_refined.json")
CLASSIFICATION = "classification_result.json"
BUCKETS = "buckets.json"
UNCLASSIFIED = "unclassified"
BOX_TYPES = ("bbox", "polygon", "refusal")


def read(path: Path, *, strict: bool = False) -> Dataset:
    """Read the folder holding OSWorld-G.json, or one annotation file by name."""
    file = _annotation_file(path)
    root = file.parent
    images = root / "images"
    if not images.is_dir():
        raise LayoutError(Problem(str(root), None, "no images/ folder beside the annotations"))
    collector = Collector(BENCHMARK, root, strict=strict)
    records = json_records(collector, file)
    categories = _categories(root, collector)
    for index, item in enumerate(records):
        has_id = isinstance(item, dict) and isinstance(item.get("id"), str)
        sample_id = item["id"] if has_id else f"#{index}"
        try:
            sample = _sample(item, sample_id, images, collector, categories)
        except SampleError as bad:
            collector.problem(file.name, sample_id, str(bad))
            continue
        collector.add(sample, file.name)
    return collector.dataset()


def _annotation_file(path: Path) -> Path:
    if path.is_file():
        return path
    if not path.is_dir():
        raise LayoutError(Problem(str(path), None, "no such file or folder"))
    for name in ANNOTATIONS:
        if (path / name).is_file():
            return path / name
    raise LayoutError(Problem(str(path), None, f"no {ANNOTATIONS[0]} here (nor {ANNOTATIONS[1]})"))


class _Categories:
    """Which categories a sample belongs to, by id or by its GUI types."""

    def __init__(
        self, by_id: Mapping[str, tuple[str, ...]] | None, buckets: Mapping[str, set[str]] | None
    ) -> None:
        self.by_id = by_id
        self.buckets = buckets

    def of(self, sample_id: str, gui_types: tuple[str, ...]) -> tuple[str, ...]:
        found: tuple[str, ...] = ()
        if self.by_id is not None:
            found = self.by_id.get(sample_id, ())
        elif self.buckets is not None:
            found = tuple(
                name for name, types in self.buckets.items() if types.intersection(gui_types)
            )
        return found or (UNCLASSIFIED,)


def _categories(root: Path, collector: Collector) -> _Categories:
    classification = root / CLASSIFICATION
    if classification.is_file():
        data = _json_object(collector, classification)
        classified = data.get("classified")
        if not isinstance(classified, dict):
            raise LayoutError(
                Problem(CLASSIFICATION, None, 'should hold {"classified": {category: [...]}}')
            )
        by_id: dict[str, tuple[str, ...]] = {}
        for name, members in classified.items():
            if not isinstance(members, list):
                raise LayoutError(
                    Problem(CLASSIFICATION, None, f"category {name!r} should list its samples")
                )
            for member in members:
                member_id = member.get("id") if isinstance(member, dict) else None
                if not isinstance(member_id, str):
                    raise LayoutError(
                        Problem(
                            CLASSIFICATION,
                            None,
                            f"category {name!r} holds an entry without a string 'id': {member!r}",
                        )
                    )
                if name not in by_id.get(member_id, ()):
                    by_id[member_id] = (*by_id.get(member_id, ()), name)
        return _Categories(by_id, None)
    buckets_file = root / BUCKETS
    if buckets_file.is_file():
        data = _json_object(collector, buckets_file)
        buckets: dict[str, set[str]] = {}
        for name, types in data.items():
            if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
                raise LayoutError(
                    Problem(BUCKETS, None, f"bucket {name!r} should list GUI type names")
                )
            buckets[name] = set(types)
        return _Categories(None, buckets)
    return _Categories(None, None)


def _json_object(collector: Collector, path: Path) -> dict[str, Any]:
    try:
        data = json.loads(collector.annotation(path))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise LayoutError(Problem(path.name, None, f"not valid JSON: {error}")) from error
    if not isinstance(data, dict):
        raise LayoutError(Problem(path.name, None, "should hold a JSON object"))
    return data


def _sample(
    item: object, sample_id: str, images: Path, collector: Collector, categories: _Categories
) -> GroundingSample:
    record = record_of(item)
    text(record, "id")
    filename = text(record, "image_path")
    declared = size(record, "image_size")
    instruction = text(record, "instruction")
    box_type = text(record, "box_type")
    if box_type not in BOX_TYPES:
        raise SampleError(f"unknown box_type {box_type!r}: expected one of {', '.join(BOX_TYPES)}")
    gui_types = _gui_types(record)
    image_path = image_in(images, filename)
    image = collector.image_file(image_path)
    same_size(declared, image, "image_size")
    target: Target
    if box_type == "bbox":
        target = box_xywh(numbers(record, "box_coordinates", 4), "box_coordinates", image)
    elif box_type == "polygon":
        target = polygon(numbers(record, "box_coordinates"), "box_coordinates", image)
    else:
        field(record, "box_coordinates")
        target = Refusal()
    return GroundingSample(
        id=sample_id,
        image=image_ref(image_path),
        instruction=instruction,
        target=target,
        width=image.width,
        height=image.height,
        groups={"box_type": box_type},
        memberships={"category": categories.of(sample_id, gui_types), "GUI_types": gui_types},
    )


def _gui_types(record: Mapping[str, Any]) -> tuple[str, ...]:
    value = field(record, "GUI_types")
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SampleError(f"field 'GUI_types' should be a list of strings, got {value!r}")
    return tuple(value)
