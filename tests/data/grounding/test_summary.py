"""Summaries: Wilson intervals against published values, a bootstrap that depends only
on its seed, the official breakdowns, the unparsed rate, and left-out samples counted
and stated (never scored as misses)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from holodesk.data.grounding.benchmarks import BENCHMARKS
from holodesk.data.grounding.readers import osworld_g, screenspot_v2, showdown
from holodesk.data.grounding.scoring import Answer, Verdict, score
from holodesk.data.grounding.summary import (
    bootstrap_interval,
    summarise,
    wilson_interval,
)
from tests.data.grounding import layouts


@pytest.mark.parametrize(
    ("hits", "count", "low", "high"),
    [
        # Newcombe (1998), "Two-sided confidence intervals for the single proportion",
        # Table I, method 3 (score interval without continuity correction), 4 decimals.
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
        # statsmodels proportion_confint(8, 10, method="wilson") and (0, 10).
        (8, 10, 0.4902, 0.9433),
        (0, 10, 0.0, 0.2775),
    ],
)
def test_wilson_known_values(hits: int, count: int, low: float, high: float) -> None:
    got_low, got_high = wilson_interval(hits, count)
    assert got_low == pytest.approx(low, abs=5e-5)
    assert got_high == pytest.approx(high, abs=5e-5)


def test_wilson_ends_are_exact() -> None:
    assert wilson_interval(0, 7)[0] == 0.0
    assert wilson_interval(7, 7)[1] == 1.0


def test_intervals_of_nothing_are_none() -> None:
    assert wilson_interval(0, 0) == (None, None)
    assert bootstrap_interval(0, 0) == (None, None)


def test_bootstrap_is_deterministic_with_its_seed() -> None:
    first = bootstrap_interval(368, 557, seed=7)
    assert bootstrap_interval(368, 557, seed=7) == first
    # The seed drives the resamples (few of them, so the percentiles move with it).
    assert len({bootstrap_interval(368, 557, seed=s, resamples=40) for s in range(10)}) > 1
    low, high = first
    assert low is not None
    assert high is not None
    # A sound percentile interval around 368/557 = 0.661, close to Wilson's.
    w_low, w_high = wilson_interval(368, 557)
    assert low < 368 / 557 < high
    assert w_low is not None
    assert w_high is not None
    assert abs(low - w_low) < 0.01
    assert abs(high - w_high) < 0.01
    # Degenerate samples: every resample is the same.
    assert bootstrap_interval(5, 5) == (1.0, 1.0)
    assert bootstrap_interval(0, 5) == (0.0, 0.0)


def test_screenspot_v2_breakdown_unparsed_and_left_out(tmp_path: Path) -> None:
    dataset = screenspot_v2.read(layouts.write_screenspot_v2(tmp_path))
    by_id = dataset.by_id()
    answers = {
        "mobile-0": Answer.point(50, 30),  # inside 20..80 x 10..50
        "mobile-1": Answer.point(0, 0),  # a miss
        "desktop-0": Answer.unparsed(),
        "desktop-1": Answer.point(115, 75),  # inside
        "web-0": Answer.point(40, 90),  # inside
        # web-1 has no verdict: left out
    }
    verdicts = {i: score(by_id[i], a) for i, a in answers.items()}
    summary = summarise("screenspot-v2", dataset.samples, verdicts)
    assert summary.overall.count == 5
    assert summary.overall.hits == 3
    assert summary.overall.accuracy == pytest.approx(0.6)
    assert summary.left_out == 1
    assert summary.total == 6
    assert summary.overall.unparsed == 1
    assert summary.overall.unparsed_rate == pytest.approx(0.2)
    assert dict(summary.outcomes) == {"hit": 3, "miss": 1, "absent": 0, "unparsed": 1}
    assert (summary.overall.low, summary.overall.high) == wilson_interval(3, 5)
    platform_type = summary.breakdowns[0]
    assert platform_type.keys == ("platform", "data_type")
    assert [(r.values, r.rate.count, r.rate.hits) for r in platform_type.rows] == [
        (("desktop", "icon"), 1, 1),
        (("desktop", "text"), 1, 0),
        (("mobile", "icon"), 1, 0),
        (("mobile", "text"), 1, 1),
        (("web", "text"), 1, 1),
    ]
    table = summary.table()
    assert "screenspot-v2: 60.0% [" in table
    assert "95% Wilson interval" in table
    assert "model card: 89.9%" in table
    assert "scored 5 of 6 samples; 1 left out (no verdict, not counted as misses)" in table
    assert "unparsed answers: 1 (20.0%)" in table
    assert "desktop / icon" in table
    data = json.loads(json.dumps(summary.to_json()))
    assert data["scored"] == 5
    assert data["left_out"] == 1
    assert data["overall"]["hits"] == 3
    assert data["interval"]["method"] == "wilson"
    assert data["breakdowns"][0]["rows"][0]["values"] == ["desktop", "icon"]


def test_nothing_scored_is_said_so(tmp_path: Path) -> None:
    dataset = screenspot_v2.read(layouts.write_screenspot_v2(tmp_path))
    summary = summarise("screenspot-v2", dataset.samples, {}, not_read=2)
    assert summary.overall.count == 0
    assert summary.overall.accuracy is None
    assert summary.left_out == 6
    assert "no samples scored" in summary.table()
    assert "scored 0 of 6 samples; 6 left out" in summary.table()
    assert "2 more not read (layout problems)" in summary.table()


def test_verdicts_for_unknown_samples_are_refused(tmp_path: Path) -> None:
    dataset = screenspot_v2.read(layouts.write_screenspot_v2(tmp_path))
    with pytest.raises(ValueError, match=r"1 verdict.*does not hold: web-9"):
        summarise("screenspot-v2", dataset.samples, {"web-9": Verdict(True, "hit")})


def test_osworld_g_counts_a_sample_in_each_of_its_categories(tmp_path: Path) -> None:
    dataset = osworld_g.read(layouts.write_osworld_g(tmp_path))
    by_id = dataset.by_id()
    verdicts = {
        "A1-0": score(by_id["A1-0"], Answer.point(30, 20)),  # hit
        "A1-1": score(by_id["A1-1"], Answer.point(80, 40)),  # the notch: miss
        "B2-0": score(by_id["B2-0"], Answer.refusal()),  # hit
    }
    summary = summarise(BENCHMARKS["osworld-g"], dataset.samples, verdicts)
    assert (summary.overall.hits, summary.overall.count) == (2, 3)
    category = summary.breakdowns[0]
    assert category.keys == ("category",)
    assert [(r.values[0], r.rate.hits, r.rate.count) for r in category.rows] == [
        ("element_recognition", 1, 2),
        ("fine_grained_manipulation", 0, 1),
        ("refusal", 1, 1),
    ]


def test_showdown_uses_the_seeded_bootstrap(tmp_path: Path) -> None:
    dataset = showdown.read(layouts.write_showdown(tmp_path))
    miss = Verdict(False, "miss")
    verdicts = {s.id: miss if s.id == "s-2" else Verdict(True, "hit") for s in dataset.samples}
    summary = summarise("showdown", dataset.samples, verdicts, seed=3, resamples=2000)
    assert summary.interval == "bootstrap"
    assert (summary.overall.low, summary.overall.high) == bootstrap_interval(
        2, 3, seed=3, resamples=2000
    )
    assert summary.breakdowns == ()
    assert "95% percentile bootstrap, 2000 resamples, seed 3" in summary.table()
    assert summary.to_json()["interval"] == {
        "method": "bootstrap", "confidence": 0.95, "resamples": 2000, "seed": 3,
    }  # fmt: skip
