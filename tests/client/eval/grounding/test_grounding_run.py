"""`holodesk eval grounding` against a real daemon with the OCR policy (its Locate finds
text with Tesseract), on data sets in each benchmark's exact layout whose screens hold
words: real hits, misses and "absent" answers, scored by each benchmark's rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.exit_codes import ExitCode
from holodesk.daemon.policies.ocr.policy import OcrPolicy
from holodesk.data.grounding.benchmarks import BENCHMARKS
from tests.daemon.support import running_daemon
from tests.data.grounding import layouts

from .support import (
    SCREEN_A,
    holodesk_async,
    ids,
    lines,
    screenspot_v2_records,
    word_screen,
    xywh,
)


async def test_a_screenspot_run_scores_every_sample_by_its_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records, expected = screenspot_v2_records()
    data = layouts.write_screenspot_v2(tmp_path / "ssv2", records)
    run = tmp_path / "run"
    async with running_daemon([OcrPolicy()]) as daemon:
        server = daemon.running.address
        code = await holodesk_async(
            "eval", "grounding", "screenspot-v2", data, "--server", server, "--out", run, "-k", "3"
        )
    out, err = capsys.readouterr()
    assert code == ExitCode.SUCCEEDED, err

    # One answer per sample, in the sample's own pixels, with the daemon's status.
    answers = {row["id"]: row for row in lines(run / "predictions.jsonl")}
    assert sorted(answers) == sorted(expected)
    for sample_id, outcome in expected.items():
        status = answers[sample_id]["status"]
        assert status == ("absent" if outcome == "absent" else "found"), answers[sample_id]

    summary = json.loads((run / "summary.json").read_text())
    hits = sum(1 for o in expected.values() if o == "hit")
    assert summary["overall"]["count"] == len(expected)
    assert summary["overall"]["hits"] == hits
    assert summary["outcomes"] == {
        "hit": hits,
        "miss": sum(1 for o in expected.values() if o == "miss"),
        "absent": 1,
        "unparsed": 0,
    }
    assert summary["left_out"] == 0
    assert summary["complete"] is True
    low, high = summary["overall"]["interval"]
    assert low < hits / len(expected) < high
    # The official breakdown: platform x text/icon, and each alone.
    keys = [tuple(b["keys"]) for b in summary["breakdowns"]]
    assert keys == [("platform", "data_type"), ("platform",), ("data_type",)]
    platforms = {tuple(r["values"]): r for r in summary["breakdowns"][1]["rows"]}
    assert platforms[("desktop",)]["hits"] == 1
    assert platforms[("desktop",)]["count"] == 2
    assert platforms[("web",)]["hits"] == 2
    assert platforms[("web",)]["count"] == 3

    # The manifest says what answered, as the daemon's Locate reported it.
    manifest = json.loads((run / "manifest.json").read_text())
    dataset = BENCHMARKS["screenspot-v2"].read(data)
    assert manifest["benchmark"] == "screenspot-v2"
    assert manifest["dataset"]["content_hash"] == dataset.content_hash
    assert manifest["dataset"]["scope"] == len(expected)
    policy = manifest["policy"]
    assert policy["policy"] == "ocr"
    assert policy["engine"] == "ocr"
    assert policy["model"].startswith("tesseract")
    assert policy["prompt_hash"].startswith("sha256:")
    assert len(policy["prompt_hash"]) == 71
    assert policy["resize_rule"] == "none"
    assert manifest["daemon"]["version"]
    assert manifest["holodesk_version"]

    # The printed table is the summary's; the report has a card per sample.
    assert f"screenspot-v2: {100 * hits / len(expected):.1f}%" in out
    assert "by platform x data_type" in out
    page = (run / "report.html").read_text()
    for sample_id, outcome in expected.items():
        assert f'<section class="card {outcome}" id="s-{sample_id}">' in page
    assert page.count('<section class="card ') == len(expected)
    assert '<label for="f-miss">misses (2)</label>' in page
    assert "<script" not in page
    assert (run / "report.html").stat().st_mode & 0o077 == 0


async def test_osworld_g_refusals_are_hit_only_by_absent_and_polygons_by_their_inside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    image, boxes = word_screen(SCREEN_A)
    x1, y1, x2, y2 = boxes["Cancel"]
    # A concave polygon around Cancel whose notch (24 px wide, from the top to 8 px
    # below the word's middle) holds the centre OCR points at, whatever its few pixels
    # of difference from Pillow's box: a miss, though the polygon's bounds hold it.
    cx, cy = (x1 + x2) // 2, (y1 + y2) // 2
    notched = [x1 - 5, y1 - 5, cx - 12, y1 - 5, cx - 12, cy + 8, cx + 12, cy + 8, cx + 12,
               y1 - 5, x2 + 5, y1 - 5, x2 + 5, y2 + 5, x1 - 5, y2 + 5]  # fmt: skip
    size = [480, 240]
    records: list[dict[str, Any]] = [
        {"id": "bbox-hit", "image_path": "a.png", "image_size": size, "_image": image,
         "instruction": "Submit", "box_type": "bbox", "box_coordinates": xywh(boxes["Submit"]),
         "GUI_types": ["Button"]},
        {"id": "polygon-miss", "image_path": "a.png", "image_size": size, "_image": image,
         "instruction": "Cancel", "box_type": "polygon", "box_coordinates": notched,
         "GUI_types": ["Button"]},
        {"id": "refusal-hit", "image_path": "a.png", "image_size": size, "_image": image,
         "instruction": "Unicorn", "box_type": "refusal", "box_coordinates": [-1, -1, -1, -1],
         "GUI_types": ["/"]},
        {"id": "refusal-miss", "image_path": "a.png", "image_size": size, "_image": image,
         "instruction": "Submit", "box_type": "refusal", "box_coordinates": [-1, -1, -1, -1],
         "GUI_types": ["/"]},
    ]  # fmt: skip
    classification = {
        "classified": {
            "text_matching": [{"id": "bbox-hit"}, {"id": "polygon-miss"}],
            "refusal": [{"id": "refusal-hit"}, {"id": "refusal-miss"}],
        }
    }
    data = layouts.write_osworld_g(tmp_path / "osg", records, classification=classification)
    run = tmp_path / "run"
    async with running_daemon([OcrPolicy()]) as daemon:
        code = await holodesk_async(
            "eval", "grounding", "osworld-g", data, "--server", daemon.running.address,
            "--out", run,
        )  # fmt: skip
    assert code == ExitCode.SUCCEEDED, capsys.readouterr().err
    summary = json.loads((run / "summary.json").read_text())
    page = (run / "report.html").read_text()
    outcomes = {
        "bbox-hit": "hit",
        "polygon-miss": "miss",
        "refusal-hit": "hit",
        "refusal-miss": "miss",
    }
    for sample_id, outcome in outcomes.items():
        assert f'<section class="card {outcome}" id="s-{sample_id}">' in page
    assert summary["overall"]["hits"] == 2
    categories = {tuple(r["values"]): r["hits"] for r in summary["breakdowns"][0]["rows"]}
    assert categories == {("refusal",): 1, ("text_matching",): 1}
    assert "<polygon points=" in page


async def test_every_benchmark_layout_runs_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each writer's default set (plain screens, no words: OCR answers "absent" to all),
    through the real readers, runner, scorer and report."""
    writers = {
        "screenspot-v2": layouts.write_screenspot_v2,
        "screenspot-pro": layouts.write_screenspot_pro,
        "osworld-g": layouts.write_osworld_g,
        "groundui-1k": layouts.write_groundui,
        "webclick": layouts.write_webclick,
        "showdown": layouts.write_showdown,
    }
    assert set(writers) == set(BENCHMARKS)
    async with running_daemon([OcrPolicy()]) as daemon:
        for name, write in writers.items():
            data = write(tmp_path / name)
            run = tmp_path / f"run-{name}"
            code = await holodesk_async(
                "eval", "grounding", name, data, "--server", daemon.running.address,
                "--out", run,
            )  # fmt: skip
            assert code == ExitCode.SUCCEEDED, (name, capsys.readouterr().err)
            dataset = BENCHMARKS[name].read(data)
            answered = lines(run / "predictions.jsonl")
            assert sorted(ids(answered)) == sorted(s.id for s in dataset.samples), name
            assert {row["status"] for row in answered} == {"absent"}, name
            summary = json.loads((run / "summary.json").read_text())
            refusals = sum(1 for s in dataset.samples if type(s.target).__name__ == "Refusal")
            assert summary["overall"]["hits"] == refusals, name
            assert summary["interval"]["method"] == BENCHMARKS[name].interval
            page = (run / "report.html").read_text()
            assert page.count('<section class="card ') == len(dataset.samples), name


async def test_a_bad_data_set_is_named_and_skipped_or_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records, _ = screenspot_v2_records()
    broken = [
        *records,
        {"_platform": "web", "_image": None, "img_filename": "gone.png", "bbox": [1, 1, 5, 5],
         "instruction": "Submit", "data_type": "text", "data_source": "tests"},
        {"_platform": "web", "img_filename": "a.png", "bbox": [400, 200, 500, 100],
         "instruction": "Submit", "data_type": "text", "data_source": "tests"},
    ]  # fmt: skip
    data = layouts.write_screenspot_v2(tmp_path / "ssv2", broken)
    dataset = BENCHMARKS["screenspot-v2"].read(data)
    assert len(dataset.problems) == 2
    async with running_daemon([OcrPolicy()]) as daemon:
        server = daemon.running.address
        stop = tmp_path / "stop"
        code = await holodesk_async(
            "eval", "grounding", "screenspot-v2", data, "--server", server, "--out", stop,
            "--on-problem", "stop",
        )  # fmt: skip
        err = capsys.readouterr().err
        assert code == ExitCode.FAILED
        assert "gone.png" in err
        assert "2 problem(s)" in err
        assert "--on-problem stop" in err
        assert not stop.exists()  # nothing asked, nothing written

        skip = tmp_path / "skip"
        code = await holodesk_async(
            "eval", "grounding", "screenspot-v2", data, "--server", server, "--out", skip,
            "--limit", "4",
        )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == ExitCode.SUCCEEDED, err
    assert "gone.png" in err
    assert "left out (--on-problem skip)" in err
    summary = json.loads((skip / "summary.json").read_text())
    assert summary["overall"]["count"] == 4  # --limit: the first four
    assert summary["not_read"] == 2
    assert {p["sample_id"] for p in summary["problems"]} == {p.sample_id for p in dataset.problems}
    assert "2 more not read" in out


async def test_a_daemon_that_refuses_every_call_stops_the_run_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records, _ = screenspot_v2_records()
    data = layouts.write_screenspot_v2(tmp_path / "ssv2", records)
    async with running_daemon([OcrPolicy()]) as daemon:
        server = daemon.running.address
        run = tmp_path / "run"
        code = await holodesk_async(
            "eval", "grounding", "screenspot-v2", data, "--server", server, "--out", run,
            "--policy", "nope",
        )  # fmt: skip
    err = capsys.readouterr().err
    assert code == ExitCode.DAEMON_ERROR
    assert "NOT_FOUND" in err
    assert "policy nope not found" in err
    assert not run.exists()  # no answer, no failure: no run to resume

    # Nobody listening there any more.
    code = await holodesk_async(
        "eval", "grounding", "screenspot-v2", data, "--server", server, "--out", run
    )
    err = capsys.readouterr().err
    assert code == ExitCode.DAEMON_ERROR
    assert "UNAVAILABLE" in err
    assert not run.exists()


async def test_a_sample_the_daemon_refuses_is_left_out_and_named_or_stops_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records, _ = screenspot_v2_records()
    # The contract's limit on a description is 4096 characters: the daemon refuses it.
    long = {**records[1], "instruction": "Cancel " * 800}
    data = layouts.write_screenspot_v2(tmp_path / "ssv2", [records[0], long, *records[2:4]])
    async with running_daemon([OcrPolicy()]) as daemon:
        server = daemon.running.address
        skip = tmp_path / "skip"
        code = await holodesk_async(
            "eval", "grounding", "screenspot-v2", data, "--server", server, "--out", skip,
            "-k", "1",
        )  # fmt: skip
        out, err = capsys.readouterr()
        assert code == ExitCode.FAILED
        assert "mobile-1: the daemon refused it: INVALID_ARGUMENT" in err
        summary = json.loads((skip / "summary.json").read_text())
        assert summary["overall"]["count"] == 3
        assert summary["left_out_reasons"] == {"failed": 1}
        assert summary["failures"][0]["id"] == "mobile-1"
        assert summary["complete"] is False
        assert "1 sample(s) failed (--resume tries them again)" in out

        # Resumed: only the failed sample is asked again (and fails again).
        code = await holodesk_async(
            "eval", "grounding", "screenspot-v2", data, "--server", server, "--out", skip,
            "--resume",
        )  # fmt: skip
        assert code == ExitCode.FAILED
        assert "3 already answered, 1 to ask" in capsys.readouterr().err
        assert sorted(ids(lines(skip / "predictions.jsonl"))) == [
            "desktop-0", "mobile-0", "mobile-1", "mobile-2",
        ]  # fmt: skip

        stop = tmp_path / "stop"
        code = await holodesk_async(
            "eval", "grounding", "screenspot-v2", data, "--server", server, "--out", stop,
            "-k", "1", "--on-problem", "stop",
        )  # fmt: skip
    err = capsys.readouterr().err
    assert code == ExitCode.FAILED
    assert "stopped: sample 'mobile-1'" in err
    assert "(--on-problem stop)" in err
    assert ids(lines(stop / "predictions.jsonl")) == ["mobile-0", "mobile-1"]
