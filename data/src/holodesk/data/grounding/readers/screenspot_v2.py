"""ScreenSpot-v2 as OS-Copilot ships it (Hugging Face OS-Copilot/ScreenSpot-v2).

Layout: `screenspot_mobile_v2.json`, `screenspot_desktop_v2.json`,
`screenspot_web_v2.json` (each a list of {img_filename, bbox, instruction, data_type,
data_source}) beside the image folder `screenspotv2_image/` (the unzipped
`screenspotv2_image.zip`). `bbox` is [x, y, w, h] in pixels: the box is x..x+w,
y..y+h, edges included. The platform comes from the file name; the official table is
platform x data_type (text/icon). Samples have no id: ours is `<platform>-<index>`.
"""

from __future__ import annotations

from pathlib import Path

from holodesk.data.grounding.readers.layout import (
    Collector,
    SampleError,
    box_xywh,
    image_in,
    image_ref,
    json_records,
    numbers,
    record_of,
    text,
)
from holodesk.data.grounding.samples import Dataset, GroundingSample, LayoutError, Problem

BENCHMARK = "screenspot-v2"
PLATFORMS = ("mobile", "desktop", "web")
IMAGE_DIRS = ("screenspotv2_image", "images")


def annotation_name(platform: str) -> str:
    return f"screenspot_{platform}_v2.json"


def read(path: Path, *, strict: bool = False) -> Dataset:
    """Read the folder (all three platforms) or one `screenspot_<platform>_v2.json`."""
    root = path if path.is_dir() else path.parent
    collector = Collector(BENCHMARK, root, strict=strict)
    files = _annotation_files(path, collector)
    images = _image_dir(root)
    for platform, file in files:
        for index, item in enumerate(json_records(collector, file)):
            sample_id = f"{platform}-{index}"
            try:
                collector.add(_sample(item, sample_id, platform, images, collector), file.name)
            except SampleError as bad:
                collector.problem(file.name, sample_id, str(bad))
    return collector.dataset()


def _annotation_files(path: Path, collector: Collector) -> list[tuple[str, Path]]:
    if path.is_file():
        for platform in PLATFORMS:
            if path.name == annotation_name(platform):
                return [(platform, path)]
        raise LayoutError(
            Problem(
                str(path),
                None,
                "not a ScreenSpot-v2 annotation file: expected one of "
                + ", ".join(annotation_name(p) for p in PLATFORMS),
            )
        )
    if not path.is_dir():
        raise LayoutError(Problem(str(path), None, "no such file or folder"))
    found = [(p, path / annotation_name(p)) for p in PLATFORMS]
    present = [(p, f) for p, f in found if f.is_file()]
    if not present:
        raise LayoutError(
            Problem(
                str(path),
                None,
                "no ScreenSpot-v2 annotation file here: expected "
                + ", ".join(annotation_name(p) for p in PLATFORMS),
            )
        )
    for platform, file in found:
        if not file.is_file():
            collector.problem(file.name, None, f"missing: the {platform} platform is left out")
    return present


def _image_dir(root: Path) -> Path:
    for name in IMAGE_DIRS:
        if (root / name).is_dir():
            return root / name
    zipped = root / "screenspotv2_image.zip"
    hint = f" (unzip {zipped.name} here)" if zipped.is_file() else ""
    raise LayoutError(
        Problem(str(root), None, f"no image folder {IMAGE_DIRS[0]}/ beside the annotations{hint}")
    )


def _sample(
    item: object, sample_id: str, platform: str, images: Path, collector: Collector
) -> GroundingSample:
    record = record_of(item)
    filename = text(record, "img_filename")
    bbox = numbers(record, "bbox", 4)
    instruction = text(record, "instruction")
    data_type = text(record, "data_type")
    data_source = text(record, "data_source")
    image_path = image_in(images, filename)
    image = collector.image_file(image_path)
    return GroundingSample(
        id=sample_id,
        image=image_ref(image_path),
        instruction=instruction,
        target=box_xywh(bbox, "bbox", image),
        width=image.width,
        height=image.height,
        groups={"platform": platform, "data_type": data_type, "data_source": data_source},
    )
