"""Write grounding benchmarks in their exact published layouts, images drawn on the spot.

One writer per benchmark, `write_<benchmark>(root, samples=None) -> Path`: it returns
the path a reader takes (the data set's folder). `samples` are records in the
benchmark's own field names and conventions, exactly as its files hold them, plus a
few writer-only keys (never written) that say how to make the image:

- `_size`: (width, height) of the image to draw (default 200 x 120);
- `_image`: bytes to write as the image instead of drawing one (e.g. b"junk"), or
  None to write no image at all (a missing image);
- `_draw`: (x1, y1, x2, y2) pixels to paint as the target, so a picture of the
  sample shows where it is (default: the record's own box when the writer knows it);
- `_platform` (ScreenSpot-v2: which file), `_file` (ScreenSpot-Pro: which
  annotations/<name>.json).

Without `samples`, each writer writes a small valid default set (`DEFAULT_<NAME>`),
so a test of the runner gets a readable data set from one call. Images that several
records share are drawn once, from the first record that names them.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

Record = Mapping[str, Any]

SIZE = (200, 120)
BACKGROUND = (236, 238, 242)
TARGET = (40, 110, 220)


def draw_image(
    size: tuple[int, int] = SIZE,
    target: tuple[float, float, float, float] | None = None,
    *,
    image_format: str = "PNG",
) -> bytes:
    """A plain screen of `size` with the target painted on it, encoded."""
    image = Image.new("RGB", size, BACKGROUND)
    if target is not None:
        x1, y1, x2, y2 = target
        # Ordered, so a test's deliberately inverted box still gets a picture.
        corners = (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))
        ImageDraw.Draw(image).rectangle(corners, fill=TARGET)
    out = io.BytesIO()
    image.save(out, format=image_format)
    return out.getvalue()


def _image_bytes(record: Record, box: tuple[float, float, float, float] | None) -> bytes | None:
    if "_image" in record:
        data = record["_image"]
        return data if data is None else bytes(data)
    draw = record.get("_draw", box)
    return draw_image(tuple(record.get("_size", SIZE)), draw)


def _write_image(path: Path, record: Record, box: tuple[float, float, float, float] | None) -> None:
    if path.exists():
        return
    data = _image_bytes(record, box)
    if data is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _public(record: Record) -> dict[str, Any]:
    return {k: v for k, v in record.items() if not k.startswith("_")}


def _corners(values: Any) -> tuple[float, float, float, float] | None:
    try:
        x1, y1, x2, y2 = (float(v) for v in values)
    except (TypeError, ValueError):
        return None
    return (x1, y1, x2, y2)


def _xywh(values: Any) -> tuple[float, float, float, float] | None:
    corners = _corners(values)
    if corners is None:
        return None
    x, y, w, h = corners
    return (x, y, x + w, y + h)


# ScreenSpot-v2 ---------------------------------------------------------------------

SCREENSPOT_V2_PLATFORMS = ("mobile", "desktop", "web")

DEFAULT_SCREENSPOT_V2: tuple[Record, ...] = (
    {"_platform": "mobile", "img_filename": "mobile_1.png", "bbox": [20, 10, 60, 40],
     "instruction": "open the menu", "data_type": "text", "data_source": "ios"},
    {"_platform": "mobile", "img_filename": "mobile_1.png", "bbox": [150, 70, 20, 20],
     "instruction": "tap the bell icon", "data_type": "icon", "data_source": "ios"},
    {"_platform": "desktop", "img_filename": "desktop_1.png", "bbox": [5, 5, 50, 15],
     "instruction": "click File", "data_type": "text", "data_source": "windows"},
    {"_platform": "desktop", "img_filename": "desktop_2.png", "bbox": [100, 60, 30, 30],
     "instruction": "close the window", "data_type": "icon", "data_source": "macos"},
    {"_platform": "web", "img_filename": "web_1.png", "bbox": [40, 80, 100, 20],
     "instruction": "search the shop", "data_type": "text", "data_source": "shop"},
    {"_platform": "web", "img_filename": "web_1.png", "bbox": [170, 5, 20, 20],
     "instruction": "view the cart", "data_type": "icon", "data_source": "shop"},
)  # fmt: skip


def write_screenspot_v2(
    root: Path,
    samples: Sequence[Record] | None = None,
    *,
    platforms: Sequence[str] = SCREENSPOT_V2_PLATFORMS,
) -> Path:
    """`screenspot_<platform>_v2.json` for each of `platforms` + `screenspotv2_image/`."""
    records = DEFAULT_SCREENSPOT_V2 if samples is None else samples
    root.mkdir(parents=True, exist_ok=True)
    images = root / "screenspotv2_image"
    images.mkdir(exist_ok=True)
    for platform in platforms:
        mine = [r for r in records if r.get("_platform", "mobile") == platform]
        for record in mine:
            if isinstance(record.get("img_filename"), str):
                _write_image(images / record["img_filename"], record, _xywh(record.get("bbox")))
        payload = json.dumps([_public(r) for r in mine], indent=1)
        (root / f"screenspot_{platform}_v2.json").write_text(payload)
    return root


# ScreenSpot-Pro --------------------------------------------------------------------

DEFAULT_SCREENSPOT_PRO: tuple[Record, ...] = (
    {"_file": "vscode_linux.json", "id": "vscode_linux_0", "img_filename": "vscode_linux/1.png",
     "img_size": [200, 120], "bbox": [20, 10, 60, 40], "instruction": "open the explorer",
     "group": "Dev", "platform": "linux", "application": "vscode", "ui_type": "icon"},
    {"_file": "vscode_linux.json", "id": "vscode_linux_1", "img_filename": "vscode_linux/1.png",
     "img_size": [200, 120], "bbox": [100, 90, 190, 110], "instruction": "read the status bar",
     "group": "Dev", "platform": "linux", "application": "vscode", "ui_type": "text"},
    {"_file": "word_windows.json", "id": "word_windows_0", "img_filename": "word_windows/1.png",
     "img_size": [200, 120], "bbox": [0, 0, 40, 12], "instruction": "open the File menu",
     "group": "Office", "platform": "windows", "application": "word", "ui_type": "text"},
)  # fmt: skip


def write_screenspot_pro(root: Path, samples: Sequence[Record] | None = None) -> Path:
    """`annotations/<_file>` (default vscode_linux.json) + `images/<img_filename>`."""
    records = DEFAULT_SCREENSPOT_PRO if samples is None else samples
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    (root / "images").mkdir(exist_ok=True)
    files: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        files.setdefault(record.get("_file", "vscode_linux.json"), []).append(_public(record))
        if isinstance(record.get("img_filename"), str):
            path = root / "images" / record["img_filename"]
            _write_image(path, record, _corners(record.get("bbox")))
    for name, items in files.items():
        (root / "annotations" / name).write_text(json.dumps(items, indent=1))
    return root


# OSWorld-G -------------------------------------------------------------------------

DEFAULT_OSWORLD_G: tuple[Record, ...] = (
    {"id": "A1-0", "image_path": "A1.png", "image_size": [200, 120],
     "instruction": "click the funnel button", "box_type": "bbox",
     "box_coordinates": [20, 10, 60, 40], "GUI_types": ["Button", "Icon"]},
    # An L shape: the notch (x > 60, y < 60) is outside.
    {"id": "A1-1", "image_path": "A1.png", "image_size": [200, 120],
     "instruction": "select the L-shaped region", "box_type": "polygon",
     "box_coordinates": [20, 20, 60, 20, 60, 60, 100, 60, 100, 100, 20, 100],
     "GUI_types": ["Canvas"]},
    {"id": "B2-0", "image_path": "B2.png", "image_size": [200, 120],
     "instruction": "click the purple unicorn", "box_type": "refusal",
     "box_coordinates": [-1, -1, -1, -1], "GUI_types": ["/"]},
)  # fmt: skip

DEFAULT_OSWORLD_G_CLASSIFICATION: Mapping[str, Any] = {
    "classified": {
        "element_recognition": [{"id": "A1-0"}, {"id": "A1-1"}],
        "fine_grained_manipulation": [{"id": "A1-1"}],
        "refusal": [{"id": "B2-0"}],
    }
}


def write_osworld_g(
    root: Path,
    samples: Sequence[Record] | None = None,
    *,
    classification: Mapping[str, Any] | None = None,
    buckets: Mapping[str, Sequence[str]] | None = None,
    name: str = "OSWorld-G.json",
) -> Path:
    """`OSWorld-G.json` + `images/`, and `classification_result.json` / `buckets.json`
    when given (the default set comes with its classification)."""
    records = DEFAULT_OSWORLD_G if samples is None else samples
    if samples is None and classification is None and buckets is None:
        classification = DEFAULT_OSWORLD_G_CLASSIFICATION
    root.mkdir(parents=True, exist_ok=True)
    (root / "images").mkdir(exist_ok=True)
    for record in records:
        if isinstance(record.get("image_path"), str):
            coordinates = record.get("box_coordinates")
            box = None
            if record.get("box_type") == "bbox":
                box = _xywh(coordinates)
            elif record.get("box_type") == "polygon" and isinstance(coordinates, list):
                xs, ys = coordinates[0::2], coordinates[1::2]
                box = (min(xs), min(ys), max(xs), max(ys))
            _write_image(root / "images" / record["image_path"], record, box)
    (root / name).write_text(json.dumps([_public(r) for r in records], indent=1))
    if classification is not None:
        (root / "classification_result.json").write_text(json.dumps(classification))
    if buckets is not None:
        (root / "buckets.json").write_text(json.dumps({k: list(v) for k, v in buckets.items()}))
    return root


# Parquet: GroundUI-1K and WebClick ------------------------------------------------


def _write_parquet(path: Path, rows: list[dict[str, Any]], schema: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def _image_struct(record: Record, box: tuple[float, float, float, float] | None) -> Any:
    data = _image_bytes(record, box)
    return None if data is None else {"bytes": data, "path": None}


DEFAULT_GROUNDUI: tuple[Record, ...] = (
    {"instruction": "Click on \"Discounts\".", "bbox": [20, 10, 60, 40],
     "resolution": [200, 120], "source": "omniact", "platform": "web"},
    {"instruction": "Click on the close button.", "bbox": [150, 5, 190, 25],
     "resolution": [200, 120], "source": "mind2web", "platform": "desktop"},
    {"instruction": "Tap Settings.", "bbox": [10, 80, 90, 110],
     "resolution": [200, 120], "source": "aitw", "platform": "mobile"},
)  # fmt: skip


def write_groundui(root: Path, samples: Sequence[Record] | None = None, *, files: int = 1) -> Path:
    """`data/train-0000<i>-of-0000<files>.parquet`: image_path, image, instruction,
    bbox, resolution, source, platform (agent-studio's GroundUI card: bbox float64,
    resolution int64); rows are shared out in order over `files` files."""
    import pyarrow as pa

    records = DEFAULT_GROUNDUI if samples is None else samples
    rows = []
    for index, record in enumerate(records):
        row = {"image_path": f"image_{index}.png", **_public(record)}
        row.setdefault("image", _image_struct(record, _corners(record.get("bbox"))))
        rows.append(row)
    schema = pa.schema(
        [
            ("image_path", pa.string()),
            ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
            ("instruction", pa.string()),
            ("bbox", pa.list_(pa.float64())),
            ("resolution", pa.list_(pa.int64())),
            ("source", pa.string()),
            ("platform", pa.string()),
        ]
    )
    share = -(-len(rows) // files) if rows else 0
    for part in range(files):
        mine = rows[part * share : (part + 1) * share]
        name = f"train-{part:05d}-of-{files:05d}.parquet"
        _write_parquet(root / "data" / name, mine, _schema_for(mine, schema))
    return root


DEFAULT_WEBCLICK: tuple[Record, ...] = (
    {"instruction": "Select aug 7th", "bbox": [0.1, 0.25, 0.3, 0.5], "bucket": "calendars"},
    {"instruction": "Add the cable to cart", "bbox": [0.5, 0.5, 0.75, 0.75],
     "bucket": "agentbrowse"},
    {"instruction": "log in button", "bbox": [0.8, 0.0, 1.0, 0.1], "bucket": "humanbrowse"},
)  # fmt: skip


def write_webclick(root: Path, samples: Sequence[Record] | None = None) -> Path:
    """`data/test-00000-of-00001.parquet`: image, instruction, bbox (normalised x1, y1,
    x2, y2), bucket (as Hcompany/WebClick on Hugging Face)."""
    import pyarrow as pa

    records = DEFAULT_WEBCLICK if samples is None else samples
    rows = []
    for record in records:
        row = _public(record)
        width, height = record.get("_size", SIZE)
        corners = _corners(record.get("bbox"))
        box = None
        if corners is not None:
            box = (corners[0] * width, corners[1] * height, corners[2] * width, corners[3] * height)
        row.setdefault("image", _image_struct(record, box))
        rows.append(row)
    schema = pa.schema(
        [
            ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
            ("instruction", pa.string()),
            ("bbox", pa.list_(pa.float64())),
            ("bucket", pa.string()),
        ]
    )
    _write_parquet(root / "data" / "test-00000-of-00001.parquet", rows, _schema_for(rows, schema))
    return root


def _schema_for(rows: list[dict[str, Any]], schema: Any) -> Any:
    """The published schema, unless a test wrote a field of another type or dropped
    one (bad-input tests): then let pyarrow infer, so the file holds what was asked."""
    import pyarrow as pa

    if not rows:
        return schema
    try:
        pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, KeyError):
        return None
    if any(set(row) != set(schema.names) for row in rows):
        return None
    return schema


# Showdown --------------------------------------------------------------------------

SHOWDOWN_COLUMNS = ("id", "image", "instruction", "x1", "y1", "x2", "y2", "width", "height")

DEFAULT_SHOWDOWN: tuple[Record, ...] = (
    {"id": "s-0", "image": "frames/AAAA/1.png", "instruction": "click Send",
     "x1": 20, "y1": 10, "x2": 60, "y2": 40, "width": 200, "height": 120},
    {"id": "s-1", "image": "frames/AAAA/2.png", "instruction": "open the inbox",
     "x1": 0, "y1": 0, "x2": 30, "y2": 20, "width": 200, "height": 120},
    {"id": "s-2", "image": "frames/BBBB/1.png", "instruction": "scroll bar handle",
     "x1": 190, "y1": 30, "x2": 199, "y2": 90, "width": 200, "height": 120},
)  # fmt: skip


def write_showdown(
    root: Path,
    samples: Sequence[Record] | None = None,
    *,
    columns: Sequence[str] = SHOWDOWN_COLUMNS,
) -> Path:
    """`showdown-clicks-dev/data.csv` + the frames its `image` column names."""
    records = DEFAULT_SHOWDOWN if samples is None else samples
    folder = root / "showdown-clicks-dev"
    folder.mkdir(parents=True, exist_ok=True)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore")
    writer.writeheader()
    for record in records:
        writer.writerow(_public(record))
        if isinstance(record.get("image"), str) and record["image"]:
            box = _corners([record.get(c) for c in ("x1", "y1", "x2", "y2")])
            size = record.get("_size", (record.get("width"), record.get("height")))
            if not all(isinstance(v, int) for v in size):
                size = SIZE
            _write_image(folder / record["image"], {**record, "_size": size}, box)
    (folder / "data.csv").write_text(out.getvalue())
    return folder
