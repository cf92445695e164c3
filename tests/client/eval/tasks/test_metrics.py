"""Every metric on a value that passes and one that fails (real files for the file
metrics), with OSWorld's arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from holodesk.client.eval.tasks.metrics.browser import (
    is_expected_active_tab,
    is_expected_tabs,
    is_expected_url_pattern_match,
)
from holodesk.client.eval.tasks.metrics.files import (
    check_list,
    compare_text_file,
    diff_text_file,
    file_contains,
)
from holodesk.client.eval.tasks.metrics.general import (
    check_direct_json_object,
    check_include_exclude,
    exact_match,
    fuzzy_match,
    indel_ratio,
    is_in_list,
    literal_match,
    match_in_list,
)
from holodesk.client.eval.tasks.registry import METRICS

OWN = {f"holodesk.client.eval.tasks.metrics.{kind}" for kind in ("general", "files", "browser")}


@pytest.mark.parametrize(
    ("metric", "passing", "failing", "rules"),
    [
        (exact_match, "done\n", "done", {"expected": "done\n"}),
        (match_in_list, "b", "d", {"expected": ["a", "b", "c"]}),
        (is_in_list, ["x", "y"], ["z"], {"expected": "y"}),
        (is_in_list, "a long text", "short", {"expected": "long"}),
        (check_include_exclude, "a b c", "a b d", {"include": ["a", "c"], "exclude": ["d"]}),
        (check_direct_json_object, {"a": 1, "b": 2}, {"a": 1, "b": 3}, {"expected": {"b": 2}}),
        (check_direct_json_object, "{'b': 2}", "{'b': 5}", {"expected": {"b": 2}}),
        (
            check_direct_json_object,
            {"name": "Ada Lovelace", "tags": ["x", "y"]},
            {"name": "Ada", "tags": ["z"]},
            {"expected": {"name": "Lovelace", "tags": ["y"]}, "expect_in_result": True},
        ),
    ],
)
def test_value_metrics(metric: Any, passing: Any, failing: Any, rules: Any) -> None:
    assert metric(passing, rules) == 1.0
    assert metric(failing, rules) == 0.0
    assert metric(None, rules) == 0.0


def test_fuzzy_match_is_rapidfuzz_ratio() -> None:
    # rapidfuzz's fuzz.ratio: 96.55 for these two, 61.54 for kitten/sitting.
    assert fuzzy_match("this is a test!", {"expected": "this is a test"}) == pytest.approx(
        0.965517, abs=1e-6
    )
    assert indel_ratio("kitten", "sitting") == pytest.approx(8 / 13)
    assert fuzzy_match("same", {"expected": "same"}) == 1.0
    assert fuzzy_match("abc", {"expected": "xyz"}) == 0.0
    assert indel_ratio("", "") == 1.0


def test_literal_match_str_list_and_case() -> None:
    assert literal_match("Done", "done", ignore_case=True) == 1.0
    assert literal_match("Done", "done") == 0.0
    assert literal_match(["A", "b"], ["a", "B"], type="list", ignore_case=True) == 1.0
    assert literal_match(["a"], ["a", "b"], type="list") == 0.0


def test_text_file_metrics(tmp_path: Path) -> None:
    gold = tmp_path / "gold.txt"
    gold.write_text("alpha beta\ngamma\n")
    same = tmp_path / "same.txt"
    same.write_text("alpha beta\ngamma\n")
    spaced = tmp_path / "spaced.txt"
    spaced.write_text("  ALPHA\tbeta\n\ngamma  ")
    other = tmp_path / "other.txt"
    other.write_text("alpha\ndelta\n")

    assert compare_text_file(str(same), str(gold)) == 1.0
    assert compare_text_file(str(spaced), str(gold)) == 0.0
    assert compare_text_file(str(spaced), str(gold), ignore_blanks=True, ignore_case=True) == 1.0
    assert compare_text_file(None, str(gold)) == 0.0
    assert compare_text_file(str(tmp_path / "gone.txt"), str(gold)) == 0.0

    assert diff_text_file(str(same), str(gold)) == 1.0
    assert diff_text_file(str(other), str(gold)) == 0.0

    assert file_contains(str(gold), {"expected": ["beta", "gamma"]}) == 1.0
    assert file_contains(str(gold), {"expected": ["beta", "delta"]}) == 0.0

    assert check_list(str(gold), {"expect": [r"^gam"], "unexpect": [r"delta"]}) == 1.0
    assert check_list(str(other), {"expect": [r"^gam"], "unexpect": [r"delta"]}) == 0.0


def test_browser_metrics() -> None:
    tab = {"title": "B", "url": "http://127.0.0.1:8000/b.html?x=1", "content": ""}
    assert is_expected_active_tab(tab, {"type": "url", "url": "http://127.0.0.1:8000/b.html"}) == 1
    assert is_expected_active_tab(tab, {"type": "url", "url": "http://127.0.0.1:8000/a.html"}) == 0
    assert is_expected_active_tab(None, {"type": "url", "url": "x"}) == 0
    assert is_expected_url_pattern_match(tab, {"expected": [r"/b\.html", "x=1"]}) == 1
    assert is_expected_url_pattern_match(tab["url"], {"expected": [r"/a\.html"]}) == 0
    tabs = [{"title": "A", "url": "file:///a"}, {"title": "B", "url": "file:///b"}]
    assert is_expected_tabs(tabs, {"type": "url", "urls": ["file:///a", "file:///b"]}) == 1
    assert is_expected_tabs(tabs, {"type": "url", "urls": ["file:///b", "file:///a"]}) == 0


def test_every_general_metric_is_tested_here() -> None:
    """The metrics of this package's own modules (app modules test theirs)."""
    tested = {
        "exact_match",
        "match_in_list",
        "is_in_list",
        "check_include_exclude",
        "fuzzy_match",
        "literal_match",
        "check_direct_json_object",
        "compare_text_file",
        "diff_text_file",
        "file_contains",
        "check_list",
        "is_expected_active_tab",
        "is_expected_url_pattern_match",
        "is_expected_tabs",
        "infeasible",  # test_evaluate.py
    }
    assert {name for name, metric in METRICS.items() if metric.__module__ in OWN} == tested
