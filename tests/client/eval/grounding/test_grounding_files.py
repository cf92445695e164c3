"""The run folder's files: how each answer becomes the scorer's Answer (what "not
found" means), what a resumed run keeps of predictions.jsonl, and how manifests are
compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from holodesk.client.eval.grounding import manifest as manifests
from holodesk.client.eval.grounding import outputs, predictions, report
from holodesk.client.eval.grounding.predictions import Failure, Prediction
from holodesk.client.locations import Location
from holodesk.data.grounding import Box, GroundingSample, ImageRef, Refusal, score
from holodesk.data.grounding.benchmarks import BENCHMARKS
from holodesk.platform.base import Region

from .support import word_screen

BOX = GroundingSample("box", ImageRef.inline(b"", "x"), "OK", Box(10, 10, 20, 20), 100, 50)
REFUSAL = GroundingSample("no", ImageRef.inline(b"", "x"), "unicorn", Refusal(), 100, 50)


@pytest.mark.parametrize(
    ("status", "on_box", "on_refusal"),
    [
        ("found", "hit", "miss"),
        ("absent", "absent", "hit"),
        ("unparseable", "unparsed", "unparsed"),
        # A daemon that does not say why it found nothing: never credited as a refusal.
        ("unreported", "unparsed", "unparsed"),
    ],
)
def test_only_the_daemons_own_absent_is_a_refusal(
    status: str, on_box: str, on_refusal: str
) -> None:
    found = status == "found"
    location = Location(
        "OK",
        found,
        15.0 if found else None,
        15.0 if found else None,
        status=status,  # type: ignore[arg-type]
    )
    answer = Prediction.of("box", location, 0.1).answer()
    assert score(BOX, answer).outcome == on_box
    assert score(REFUSAL, answer).outcome == on_refusal


def test_a_prediction_line_round_trips_with_its_box() -> None:
    location = Location("OK", True, 15.5, 12.0, Region(10, 8, 12, 6), '{"text": "OK"}', "found")
    prediction = Prediction.of("box", location, 0.123456)
    row = json.loads(json.dumps(prediction.to_json()))
    assert row["box"] == [10, 8, 22, 14]
    assert Prediction.from_json(row) == prediction


def test_loading_keeps_whole_answers_and_drops_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    first = Prediction("a", "found", 1.0, 2.0)
    with path.open("w") as file:
        predictions.append(file, first)
        predictions.append(file, Failure("b", "INVALID_ARGUMENT: too big"))
        predictions.append(file, Prediction("a", "absent"))  # a second line for a
        predictions.append(file, Prediction("c", "unparseable", raw_output="??"))
        file.write('{"id": "d", "status": "fo')  # cut short by a crash
    read = predictions.read(path)
    assert set(read.predictions) == {"a", "c"}
    assert read.predictions["a"] == first
    assert set(read.failures) == {"b"}
    assert read.dropped == 2
    assert path.read_text().count("\n") == 4  # read() changes nothing

    loaded = predictions.load(path)
    assert set(loaded.predictions) == {"a", "c"}
    assert set(loaded.failures) == {"b"}
    # Rewritten for appending: only the answers, each once, whole lines.
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == ["a", "c"]
    assert predictions.load(path).dropped == 0


def test_manifest_differences_name_each_field_and_policy_key() -> None:
    base = {
        "benchmark": "showdown",
        "dataset": {"content_hash": "h1", "scope": 10, "limit": None},
        "policy": {"prompt_hash": "p1", "resize_rule": "none", "sampling": None, "model": "m"},
    }
    other = {
        "benchmark": "showdown",
        "dataset": {"content_hash": "h2", "scope": 10, "limit": None},
        "policy": {"prompt_hash": "p1", "resize_rule": "tile()", "sampling": None, "model": "n"},
    }
    found = manifests.differences(base, other, manifests.COMPARABLE_FIELDS)
    assert found == [
        ("dataset.content_hash", "h1", "h2"),
        ("policy.resize_rule", "none", "tile()"),
    ]
    # Resuming needs the same model too.
    resume = manifests.differences(base, other, manifests.RESUME_FIELDS)
    assert ("policy.model", "m", "n") in resume
    assert manifests.describe(found, "A", "B").splitlines() == [
        '  dataset.content_hash: A "h1", B "h2"',
        '  policy.resize_rule: A "none", B "tile()"',
    ]


def test_the_report_escapes_what_data_sets_and_models_wrote_and_shows_every_sample() -> None:
    image, _ = word_screen({"OK": (10, 10)}, size=(120, 60))
    hostile = '<img src=x onerror="alert(1)">'
    samples = [
        GroundingSample(
            f"s{i}",
            ImageRef.inline(image, "shot.png"),
            hostile,
            Box(5, 5, 40, 30),
            120,
            60,
            {"platform": "<web>"},
        )
        for i in range(3)
    ]
    answers = {"s0": Prediction("s0", "found", 20.0, 15.0, raw_output="</pre><script>x</script>")}
    failures = {"s1": Failure("s1", "INVALID_ARGUMENT: <too big>")}
    scored = outputs.score_run(BENCHMARKS["screenspot-v2"], samples, answers, failures, [])
    page = report.render_report("<title>", samples, answers, scored)
    assert "<script" not in page
    assert hostile not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    assert "&lt;/pre&gt;&lt;script&gt;" in page
    assert '<section class="card hit" id="s-s0">' in page
    assert '<section class="card left" id="s-s1">' in page
    assert "failed: INVALID_ARGUMENT: &lt;too big&gt;" in page
    assert '<section class="card left" id="s-s2">' in page
    assert "not asked: the run stopped before this sample" in page
    assert scored.table().splitlines()[0].startswith("screenspot-v2: 100.0%")
    assert scored.to_json()["left_out_reasons"] == {"failed": 1, "not asked": 1}
