"""OSWorld's general metrics on values: exact_match, match_in_list, is_in_list,
check_include_exclude, fuzzy_match, literal_match, check_direct_json_object, and
infeasible (a name only: evaluate.py decides infeasible tasks by the session's end).

A value a getter could not read (None) scores 0 everywhere: OSWorld crashes on some
of these, which scores the task 0 too."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any


def exact_match(result: Any, rules: Mapping[str, Any]) -> float:
    return float(result is not None and result == rules["expected"])


def match_in_list(result: Any, rules: Mapping[str, Any]) -> float:
    return float(result is not None and result in rules["expected"])


def is_in_list(result: Any, rules: Mapping[str, Any]) -> float:
    if result is None:
        return 0.0
    try:
        return float(rules["expected"] in result)
    except TypeError:
        return 0.0


def check_include_exclude(result: Any, rules: Mapping[str, Any]) -> float:
    if result is None:
        return 0.0
    include = rules.get("include", [])
    exclude = rules.get("exclude", [])
    return float(all(r in result for r in include) and all(r not in result for r in exclude))


def indel_ratio(a: str, b: str) -> float:
    """rapidfuzz's fuzz.ratio / 100: 2 * LCS(a, b) / (len a + len b), 1.0 for two
    empty strings. The LCS is the bit-parallel one (Hyyrö), exact and fast."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    masks: dict[str, int] = {}
    for i, char in enumerate(a):
        masks[char] = masks.get(char, 0) | (1 << i)
    full = (1 << len(a)) - 1
    row = full
    for char in b:
        matches = row & masks.get(char, 0)
        row = ((row + matches) | (row - matches)) & full
    lcs = len(a) - bin(row).count("1")
    return 2.0 * lcs / (len(a) + len(b))


def fuzzy_match(result: Any, rules: Mapping[str, Any]) -> float:
    if result is None:
        return 0.0
    return indel_ratio(str(result), str(rules["expected"]))


def literal_match(result: Any, expected: Any, **options: Any) -> float:
    kind = options.get("type", "str")
    ignore_case = bool(options.get("ignore_case", False))

    def text(value: Any) -> str:
        return str(value).lower() if ignore_case else str(value)

    if kind == "str":
        return float(text(result) == text(expected))
    if kind == "list":
        if not isinstance(result, list | tuple) or not isinstance(expected, list | tuple):
            return 0.0
        if len(result) != len(expected):
            return 0.0
        return float([text(r) for r in result] == [text(e) for e in expected])
    raise ValueError(f"literal_match: type must be 'str' or 'list', got {kind!r}")


def check_direct_json_object(result: Any, rules: Mapping[str, Any]) -> float:
    """Every key of rules["expected"] equals the result's (with `expect_in_result`: a
    list expected is one of the result's values or items, a string is contained); a
    string result is JSON (single quotes read as double, as OSWorld does)."""
    if isinstance(result, str):
        try:
            result = json.loads(result.strip().replace("'", '"'))
        except json.JSONDecodeError:
            return 0.0
    if not isinstance(result, Mapping):
        return 0.0
    expected: Mapping[str, Any] = rules["expected"]
    if any(value == "__EVALUATION_FAILED__" for value in expected.values()):
        return 0.0
    if not rules.get("expect_in_result", False):
        for key, want in expected.items():
            got = result.get(key)
            if expected.get("ignore_list_order", False):
                try:
                    if got is None or sorted(want) != sorted(got):
                        return 0.0
                except TypeError:
                    return 0.0
            elif want != got:
                return 0.0
        return 1.0
    for key, want in expected.items():
        got = result.get(key)
        if isinstance(want, list):
            if not any(
                (isinstance(got, list) and one in got) or (isinstance(got, str) and one == got)
                for one in want
            ):
                return 0.0
        elif isinstance(want, str):
            if not isinstance(got, str) or want not in got:
                return 0.0
        else:
            return 0.0
    return 1.0


def infeasible(*_: Any, **__: Any) -> float:
    """Never called: an infeasible task is scored by how its session ended."""
    raise AssertionError("infeasible is decided by evaluate.py, not called as a metric")


METRICS: Mapping[str, Callable[..., float]] = {
    "exact_match": exact_match,
    "match_in_list": match_in_list,
    "is_in_list": is_in_list,
    "check_include_exclude": check_include_exclude,
    "fuzzy_match": fuzzy_match,
    "literal_match": literal_match,
    "check_direct_json_object": check_direct_json_object,
    "infeasible": infeasible,
}
