"""Bad input, per reader: each problem names the file, the sample and what is wrong;
the sample is left out (or, when strict, reading stops there); whole-file trouble is
a LayoutError."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from holodesk.data.grounding.readers import (
    groundui,
    osworld_g,
    screenspot_pro,
    screenspot_v2,
    showdown,
    webclick,
)
from holodesk.data.grounding.samples import Dataset, LayoutError, Problem
from tests.data.grounding import layouts


def v2(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "_platform": "mobile", "img_filename": "m.png", "bbox": [20, 10, 60, 40],
        "instruction": "open the menu", "data_type": "text", "data_source": "ios",
    }  # fmt: skip
    record.update(changes)
    return {k: v for k, v in record.items() if v is not DROP}


DROP = object()
_PNG = layouts.draw_image((300, 200), (10, 10, 50, 50))
# One byte flipped inside the pixel data: the chunk's CRC no longer matches.
FLIPPED_PNG = (
    _PNG[: len(_PNG) // 2] + bytes([_PNG[len(_PNG) // 2] ^ 0xFF]) + _PNG[len(_PNG) // 2 + 1 :]
)
CUT_JPEG = layouts.draw_image((300, 200), (10, 10, 50, 50), image_format="JPEG")[:400]


def one_problem(dataset: Dataset) -> Problem:
    assert len(dataset.problems) == 1, dataset.problems
    return dataset.problems[0]


V2_CASES = [
    (v2(instruction=DROP), "field 'instruction' is missing"),
    (v2(bbox="20,10,60,40"), "field 'bbox' should be a list of numbers, got str"),
    (v2(bbox=[20, 10, 60]), "field 'bbox' should hold 4 numbers, got 3"),
    (v2(bbox=[20, 10, True, 40]), "field 'bbox' should hold numbers, got bool"),
    (v2(data_type=None), "field 'data_type' should be a string, got null"),
    (v2(img_filename="gone.png", _image=None), "image screenspotv2_image/gone.png is missing"),
    (v2(img_filename="bad.png", _image=b"junk"), "screenspotv2_image/bad.png cannot be opened"),
    (v2(img_filename="cut.png", _image=layouts.draw_image()[:60]), "cannot be opened by Pillow"),
    (v2(img_filename="flip.png", _image=FLIPPED_PNG), "broken PNG file (bad header checksum"),
    (v2(img_filename="cut.jpg", _image=CUT_JPEG), "jpg cannot be opened by Pillow"),
    (v2(bbox=[180, 10, 50, 20]), "'bbox' = [180, 10, 50, 20] reaches outside its 200x120 image"),
    (v2(bbox=[20, 10, -5, 20]), "(x,y,w,h) has a negative width or height"),
    (v2(img_filename="../m.png", _image=None), "image path '../m.png' leaves the data set's"),
]  # fmt: skip


@pytest.mark.parametrize(("bad", "what"), V2_CASES)
def test_screenspot_v2_sample_problems(tmp_path: Path, bad: Mapping[str, Any], what: str) -> None:
    good = v2(instruction="a good one")
    root = layouts.write_screenspot_v2(tmp_path, [good, bad])
    dataset = screenspot_v2.read(root)
    problem = one_problem(dataset)
    assert problem.where == "screenspot_mobile_v2.json"
    assert problem.sample_id == "mobile-1"
    assert what in problem.what
    assert what in str(problem)
    assert "screenspot_mobile_v2.json" in str(problem)
    # The good sample is still there; the bad one is left out.
    assert [s.id for s in dataset.samples] == ["mobile-0"]
    with pytest.raises(LayoutError) as raised:
        screenspot_v2.read(root, strict=True)
    assert raised.value.problem == problem


def test_screenspot_v2_missing_platform_file_and_folders(tmp_path: Path) -> None:
    root = layouts.write_screenspot_v2(tmp_path / "two", platforms=("mobile", "desktop"))
    problem = one_problem(screenspot_v2.read(root))
    assert problem == Problem(
        "screenspot_web_v2.json", None, "missing: the web platform is left out"
    )
    with pytest.raises(LayoutError, match="no ScreenSpot-v2 annotation file here"):
        screenspot_v2.read(tmp_path)
    with pytest.raises(LayoutError, match="not a ScreenSpot-v2 annotation file"):
        screenspot_v2.read(root / "screenspotv2_image" / "mobile_1.png")
    with pytest.raises(LayoutError, match="no such file or folder"):
        screenspot_v2.read(tmp_path / "nowhere")
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "screenspot_mobile_v2.json").write_text("[]")
    (bare / "screenspotv2_image.zip").write_bytes(b"PK")
    with pytest.raises(LayoutError, match=r"unzip screenspotv2_image\.zip here"):
        screenspot_v2.read(bare)


def test_screenspot_v2_not_json_or_not_a_list(tmp_path: Path) -> None:
    root = layouts.write_screenspot_v2(tmp_path)
    (root / "screenspot_web_v2.json").write_text("{not json")
    with pytest.raises(LayoutError, match=r"screenspot_web_v2\.json: not valid JSON"):
        screenspot_v2.read(root)
    (root / "screenspot_web_v2.json").write_text('{"a": 1}')
    with pytest.raises(LayoutError, match="should hold a JSON list of samples, got dict"):
        screenspot_v2.read(root)


def pro(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "p1", "img_filename": "app/1.png", "img_size": [200, 120],
        "bbox": [20, 10, 60, 40], "instruction": "i", "group": "Dev", "platform": "linux",
        "application": "vscode", "ui_type": "icon",
    }  # fmt: skip
    record.update(changes)
    return {k: v for k, v in record.items() if v is not DROP}


@pytest.mark.parametrize(
    ("bad", "what"),
    [
        (pro(img_size=[300, 120]), "img_size says 300x120 but the image is 200x120"),
        (pro(img_size=[200.5, 120]), "field 'img_size' should be two positive whole numbers"),
        (pro(bbox=[60, 10, 20, 40]), "(x1,y1,x2,y2) is inverted"),
        (pro(bbox=[20, 10, 60, 400]), "reaches outside its 200x120 image"),
        (pro(ui_type=DROP), "field 'ui_type' is missing"),
        (pro(id="p0"), "duplicate sample id"),
    ],
)
def test_screenspot_pro_sample_problems(tmp_path: Path, bad: Mapping[str, Any], what: str) -> None:
    root = layouts.write_screenspot_pro(tmp_path, [pro(id="p0"), bad])
    problem = one_problem(screenspot_pro.read(root))
    assert problem.where == "annotations/vscode_linux.json"
    assert problem.sample_id == bad["id"]
    assert what in problem.what


def test_screenspot_pro_folders(tmp_path: Path) -> None:
    with pytest.raises(LayoutError, match="no annotations/ folder"):
        screenspot_pro.read(tmp_path)
    (tmp_path / "annotations").mkdir()
    (tmp_path / "images").mkdir()
    with pytest.raises(LayoutError, match=r"holds no \.json file"):
        screenspot_pro.read(tmp_path)


def osg(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "X-1", "image_path": "X.png", "image_size": [200, 120], "instruction": "i",
        "box_type": "bbox", "box_coordinates": [20, 10, 60, 40], "GUI_types": ["Button"],
    }  # fmt: skip
    record.update(changes)
    return {k: v for k, v in record.items() if v is not DROP}


@pytest.mark.parametrize(
    ("bad", "what"),
    [
        (osg(box_type="circle"), "unknown box_type 'circle': expected one of bbox, polygon"),
        (osg(box_type="polygon", box_coordinates=[0, 0, 10, 0, 10]), "flat vertex list"),
        (osg(box_type="polygon", box_coordinates=[0, 0, 250, 0, 10, 10]), "reaches outside"),
        (osg(box_coordinates=[190, 10, 60, 40]), "reaches outside its 200x120 image"),
        (osg(image_size=[1920, 1080]), "image_size says 1920x1080 but the image is 200x120"),
        (osg(GUI_types=[1, 2]), "field 'GUI_types' should be a list of strings"),
        (osg(box_type="refusal", box_coordinates=DROP), "field 'box_coordinates' is missing"),
    ],
)
def test_osworld_g_sample_problems(tmp_path: Path, bad: Mapping[str, Any], what: str) -> None:
    root = layouts.write_osworld_g(tmp_path, [osg(id="X-0"), bad])
    problem = one_problem(osworld_g.read(root))
    assert (problem.where, problem.sample_id) == ("OSWorld-G.json", "X-1")
    assert what in problem.what


def test_osworld_g_files(tmp_path: Path) -> None:
    with pytest.raises(LayoutError, match=r"no OSWorld-G\.json here"):
        osworld_g.read(tmp_path)
    root = layouts.write_osworld_g(tmp_path / "c", classification={"classified": [1]})
    with pytest.raises(LayoutError, match=r"classification_result\.json"):
        osworld_g.read(root)
    (root / "images").rename(root / "pictures")
    with pytest.raises(LayoutError, match="no images/ folder"):
        osworld_g.read(root)


def gui(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "instruction": "i", "bbox": [20, 10, 60, 40], "resolution": [200, 120],
        "source": "omniact", "platform": "web",
    }  # fmt: skip
    record.update(changes)
    return {k: v for k, v in record.items() if v is not DROP}


PARQUET = "data/train-00000-of-00001.parquet"


@pytest.mark.parametrize(
    ("bad", "what"),
    [
        (gui(resolution=[1440, 900]), "resolution says 1440x900 but the image is 200x120"),
        (gui(bbox=[60, 10, 20, 40]), "(x1,y1,x2,y2) is inverted"),
        (gui(bbox=[20, 10, 260, 40]), "reaches outside"),
        (gui(_image=None), "column 'image' holds no image bytes (got null)"),
        (gui(_image=b"junk"), "cannot be opened by Pillow"),
        (gui(instruction=None), "field 'instruction' should be a string, got null"),
    ],
)
def test_groundui_row_problems(tmp_path: Path, bad: Mapping[str, Any], what: str) -> None:
    root = layouts.write_groundui(tmp_path, [gui(), bad])
    dataset = groundui.read(root)
    problem = one_problem(dataset)
    assert problem.where == "train-00000-of-00001.parquet row 1"
    assert problem.sample_id == "row-1"
    assert what in problem.what
    assert [s.id for s in dataset.samples] == ["row-0"]


def test_groundui_wrong_type_and_missing_column(tmp_path: Path) -> None:
    root = layouts.write_groundui(tmp_path / "t", [gui(bbox="20 10 60 40")])
    assert (
        "field 'bbox' should be a list of numbers, got str" in one_problem(groundui.read(root)).what
    )
    root = layouts.write_groundui(tmp_path / "c", [gui(platform=DROP)])
    with pytest.raises(LayoutError) as raised:
        groundui.read(root)
    assert raised.value.problem.where == PARQUET
    assert "missing column(s) platform" in raised.value.problem.what
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LayoutError, match=r"holds no \.parquet file"):
        groundui.read(empty)
    (empty / "broken.parquet").write_bytes(b"not parquet")
    with pytest.raises(LayoutError, match="not a readable Parquet file"):
        groundui.read(empty)


def test_parquet_without_pyarrow_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = layouts.write_groundui(tmp_path)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # import now fails
    with pytest.raises(LayoutError, match=r"install holodesk-data\[parquet\]"):
        groundui.read(root)


def test_webclick_problems(tmp_path: Path) -> None:
    records = [
        {"instruction": "ok", "bbox": [0.1, 0.1, 0.2, 0.2], "bucket": "calendars"},
        {"instruction": "pixels", "bbox": [20, 10, 60, 40], "bucket": "calendars"},
        {"instruction": "inverted", "bbox": [0.5, 0.1, 0.2, 0.2], "bucket": "calendars"},
        {"instruction": "no bucket", "bbox": [0.1, 0.1, 0.2, 0.2], "bucket": ""},
        {"instruction": "a hair past 1", "bbox": [0.9, 0.9, 1.009, 1.0], "bucket": "calendars"},
        {"instruction": "past 1", "bbox": [0.9, 0.9, 1.02, 1.0], "bucket": "calendars"},
    ]
    dataset = webclick.read(layouts.write_webclick(tmp_path, records))
    # 1.009 x 200 px is 201.8: within the slack (2 px, 1% of 200); 1.02 is 204: outside.
    assert [s.id for s in dataset.samples] == ["row-0", "row-4"]
    assert [(p.sample_id, p.what) for p in dataset.problems] == [
        ("row-1", "field 'bbox' = [20, 10, 60, 40] should be normalised to [0, 1]"),
        ("row-2", "field 'bbox' = [0.5, 0.1, 0.2, 0.2] (x1,y1,x2,y2) is inverted"),
        ("row-3", "field 'bucket' is empty"),
        ("row-5", "field 'bbox' = [0.9, 0.9, 1.02, 1] reaches outside its 200x120 image"),
    ]
    assert dataset.not_read == 4


def sd(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "s-1", "image": "frames/A/1.png", "instruction": "i", "x1": 20, "y1": 10,
        "x2": 60, "y2": 40, "width": 200, "height": 120,
    }  # fmt: skip
    record.update(changes)
    return record


@pytest.mark.parametrize(
    ("bad", "what"),
    [
        (sd(x1="left"), "column 'x1' should be a number, got 'left'"),
        (sd(instruction=""), "column 'instruction' is empty"),
        (sd(width=1920, _size=(200, 120)), "width, height says 1920x120 but the image is 200x120"),
        (sd(image="frames/gone.png", _image=None), "image frames/gone.png is missing"),
        (sd(x2=10), "(x1,y1,x2,y2) is inverted"),
        (sd(height="12.5"), "column 'height' should be a positive whole number"),
        (sd(image="/etc/hostname", _image=None), "image path '/etc/hostname' leaves"),
    ],
)
def test_showdown_row_problems(tmp_path: Path, bad: Mapping[str, Any], what: str) -> None:
    root = layouts.write_showdown(tmp_path, [sd(id="s-0"), bad])
    problem = one_problem(showdown.read(root))
    assert (problem.where, problem.sample_id) == ("data.csv line 3", "s-1")
    assert what in problem.what


def test_showdown_files(tmp_path: Path) -> None:
    with pytest.raises(LayoutError, match=r"no data\.csv here"):
        showdown.read(tmp_path)
    root = layouts.write_showdown(tmp_path, columns=("id", "image", "instruction"))
    with pytest.raises(LayoutError, match=r"data\.csv: missing column\(s\) x1, y1, x2, y2"):
        showdown.read(root)


def test_showdown_without_size_columns_takes_the_images(tmp_path: Path) -> None:
    # The authors' harness never reads width/height: a CSV without them is still read.
    columns = ("id", "recording_id", "image", "instruction", "x1", "y1", "x2", "y2")
    dataset = showdown.read(layouts.write_showdown(tmp_path, columns=columns))
    assert dataset.problems == ()
    assert [(s.width, s.height) for s in dataset.samples] == [(200, 120)] * 3
