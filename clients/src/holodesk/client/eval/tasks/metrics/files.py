"""OSWorld's metrics on text files (paths a getter gave): compare_text_file,
diff_text_file, file_contains, check_list. A missing file (None) scores 0."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def _read(path: Any) -> str | None:
    if not path:
        return None
    try:
        return Path(str(path)).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _blanks(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", text).strip())


def compare_text_file(actual: Any, expected: Any, **options: Any) -> float:
    got, want = _read(actual), _read(expected)
    if got is None or want is None:
        return 0.0
    if options.get("ignore_blanks", False):
        got, want = _blanks(got), _blanks(want)
    if options.get("ignore_case", False):
        got, want = got.lower(), want.lower()
    return float(got == want)


def diff_text_file(actual: Any, expected: Any) -> float:
    got, want = _read(actual), _read(expected)
    if got is None or want is None:
        return 0.0
    return difflib.SequenceMatcher(a=got.splitlines(), b=want.splitlines()).ratio()


def file_contains(path: Any, rules: Mapping[str, Any]) -> float:
    text = _read(path)
    if text is None:
        return 0.0
    return float(all(str(s) in text for s in rules["expected"]))


def check_list(path: Any, rules: Mapping[str, Any]) -> float:
    text = _read(path)
    if text is None:
        return 0.0
    expect = [re.compile(p) for p in rules.get("expect", [])]
    unexpect = [re.compile(p) for p in rules.get("unexpect", [])]
    lines = text.splitlines(keepends=True)
    found = all(any(p.search(line) for line in lines) for p in expect)
    clean = not any(p.search(line) for p in unexpect for line in lines)
    return float(found and clean)


METRICS: Mapping[str, Callable[..., float]] = {
    "compare_text_file": compare_text_file,
    "diff_text_file": diff_text_file,
    "file_contains": file_contains,
    "check_list": check_list,
}
