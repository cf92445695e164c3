"""Spreadsheet state for the bundled suite's gnumeric tasks: OSWorld's `compare_table`.

OSWorld reads .xlsx files with openpyxl, whose values are those the last program to
save the file cached. A .gnumeric file caches no values at all (only expressions), so
here every workbook, whatever its format (.gnumeric, .csv, .xlsx, .ods: anything
Gnumeric opens), is read through Gnumeric's own `ssconvert`, which loads it,
recalculates it and writes each sheet as CSV: the values a user would see in the app.

Supported rules of `compare_table(result, expected, rules=[...])` (OSWorld's names):

- `{"type": "sheet_data", "sheet_idx0": ..., "sheet_idx1": ...}`: the two sheets hold
  the same cells (numbers compared as numbers, trailing empty cells ignored);
- `{"type": "check_cell", "sheet_idx": ..., "coordinate": "D2", "props": {"value":
  {"method": "eq", "ref": 6}}}`: one cell's value matches; methods `eq`, `ne`, `lt`,
  `le`, `gt`, `ge`, `approx:TOL`, `re` (a regex searched in the cell's text).

A sheet index is OSWorld's: an int (the result's sheet by position), `"RI<n>"` or
`"EI<n>"` (the result's / expected workbook's sheet n). Without `rules`, every sheet
of the result must equal the expected workbook's sheet at the same position.
"""

from __future__ import annotations

import csv
import math
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from holodesk.client.eval.tasks.context import TaskContext
from holodesk.client.eval.tasks.kinds import Getter

SSCONVERT_TIMEOUT_S = 60.0
Sheet = list[list[str]]


class SpreadsheetError(ValueError):
    """A workbook could not be read, or a rule names what the workbook lacks."""


def read_workbook(path: str | Path) -> list[Sheet]:
    """Every sheet of the workbook at `path` as rows of cell texts, as Gnumeric shows
    them after recalculating (ssconvert, one CSV per sheet)."""
    source = Path(path)
    if not source.is_file():
        raise SpreadsheetError(f"{source}: no such file")
    program = shutil.which("ssconvert")
    if program is None:
        raise SpreadsheetError("ssconvert (Debian: gnumeric) is not installed")
    with tempfile.TemporaryDirectory(prefix="holodesk-ssconvert-") as scratch:
        # ssconvert keeps settings under HOME: a scratch HOME leaves the user's alone.
        env = {**os.environ, "HOME": scratch, "GSETTINGS_BACKEND": "memory", "NO_AT_BRIDGE": "1"}
        env.pop("DISPLAY", None)
        target = Path(scratch) / "sheet.%n.csv"
        ran = subprocess.run(
            [
                program,
                "--recalc",
                "-S",
                "--export-type=Gnumeric_stf:stf_csv",
                str(source),
                str(target),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=SSCONVERT_TIMEOUT_S,
            check=False,
        )
        sheets: list[Sheet] = []
        while (Path(scratch) / f"sheet.{len(sheets)}.csv").is_file():
            text = (Path(scratch) / f"sheet.{len(sheets)}.csv").read_text(encoding="utf-8")
            sheets.append([list(row) for row in csv.reader(text.splitlines())])
    if ran.returncode != 0 or not sheets:
        reason = ran.stderr.strip().splitlines()[-1:] or [f"exit status {ran.returncode}"]
        raise SpreadsheetError(f"{source}: ssconvert could not read it ({reason[0]})")
    return sheets


def cell(sheet: Sheet, coordinate: str) -> str:
    """The text of the cell at an A1-style coordinate ("" when empty or beyond the data)."""
    match = re.fullmatch(r"\$?([A-Za-z]{1,3})\$?([1-9][0-9]*)", coordinate.strip())
    if match is None:
        raise SpreadsheetError(f"{coordinate!r} is not a cell coordinate like D2")
    column = 0
    for letter in match.group(1).upper():
        column = column * 26 + ord(letter) - ord("A") + 1
    row = int(match.group(2)) - 1
    if row >= len(sheet) or column - 1 >= len(sheet[row]):
        return ""
    return sheet[row][column - 1]


def _number(text: Any) -> float | None:
    if isinstance(text, bool):
        return None
    if isinstance(text, int | float):
        return float(text)
    try:
        value = float(str(text).strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def same_value(a: Any, b: Any) -> bool:
    """Equal as numbers when both read as numbers (1.50 == 1.5), else as texts."""
    x, y = _number(a), _number(b)
    if x is not None and y is not None:
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)
    return str(a).strip() == str(b).strip()


def _trimmed(sheet: Sheet) -> Sheet:
    rows = [list(row) for row in sheet]
    for row in rows:
        while row and row[-1].strip() == "":
            row.pop()
    while rows and not rows[-1]:
        rows.pop()
    return rows


def same_sheet(a: Sheet, b: Sheet) -> bool:
    """The two sheets hold the same cells (trailing empty cells and rows ignored)."""
    left, right = _trimmed(a), _trimmed(b)
    return len(left) == len(right) and all(
        len(r1) == len(r2) and all(same_value(c1, c2) for c1, c2 in zip(r1, r2, strict=True))
        for r1, r2 in zip(left, right, strict=True)
    )


def _compare(method: str, value: str, ref: Any) -> bool:
    if method == "eq":
        return same_value(value, ref)
    if method == "ne":
        return not same_value(value, ref)
    if method == "re":
        return re.search(str(ref), value) is not None
    number, wanted = _number(value), _number(ref)
    if number is None or wanted is None:
        return False
    if method.startswith("approx:"):
        return abs(number - wanted) <= float(method.split(":", 1)[1])
    comparisons: Mapping[str, Callable[[float, float], bool]] = {
        "lt": lambda x, y: x < y,
        "le": lambda x, y: x <= y,
        "gt": lambda x, y: x > y,
        "ge": lambda x, y: x >= y,
    }
    if method not in comparisons:
        raise SpreadsheetError(f"unknown check_cell method {method!r}")
    return comparisons[method](number, wanted)


def _sheet(index: Any, result: Sequence[Sheet], expected: Sequence[Sheet] | None) -> Sheet:
    """OSWorld's sheet index: an int (the result's), "RI<n>" or "EI<n>"."""
    book: Sequence[Sheet] | None = result
    position: Any = index
    if isinstance(index, str):
        match = re.fullmatch(r"([RE])I([0-9]+)", index)
        if match is None:
            raise SpreadsheetError(
                f"sheet index {index!r}: only ints, 'RI<n>' and 'EI<n>' are read here"
            )
        book = result if match.group(1) == "R" else expected
        position = int(match.group(2))
    if book is None:
        raise SpreadsheetError(
            f"sheet index {index!r} names the expected workbook, and there is none"
        )
    if not isinstance(position, int) or not 0 <= position < len(book):
        raise SpreadsheetError(f"sheet index {index!r}: the workbook has {len(book)} sheet(s)")
    return book[position]


def _rule_holds(
    rule: Mapping[str, Any], result: Sequence[Sheet], expected: Sequence[Sheet] | None
) -> bool:
    kind = rule.get("type")
    if kind == "sheet_data":
        return same_sheet(
            _sheet(rule.get("sheet_idx0", 0), result, expected),
            _sheet(rule.get("sheet_idx1", "EI0"), result, expected),
        )
    if kind == "check_cell":
        sheet = _sheet(rule.get("sheet_idx", 0), result, expected)
        value = cell(sheet, str(rule["coordinate"]))
        props = rule.get("props") or {}
        unknown = set(props) - {"value"}
        if unknown:
            raise SpreadsheetError(
                f"check_cell: only the `value` prop is read here, not {sorted(unknown)}"
            )
        check = props.get("value")
        if not isinstance(check, Mapping):
            raise SpreadsheetError("check_cell needs props.value = {method, ref}")
        return _compare(str(check.get("method", "eq")), value, check.get("ref"))
    raise SpreadsheetError(f"compare_table: unknown rule type {kind!r} (sheet_data, check_cell)")


def compare_table(result: str | None, expected: str | None = None, **options: Any) -> float:
    """OSWorld's compare_table: 1.0 when every rule holds (see the module's docstring);
    0.0 when the result file is missing or a rule fails."""
    if result is None or not Path(result).is_file():
        return 0.0
    rules = options.get("rules")
    result_book = read_workbook(result)
    expected_book = read_workbook(expected) if expected is not None else None
    if rules is None:
        if expected_book is None:
            raise SpreadsheetError("compare_table needs an expected workbook or rules")
        return float(
            len(result_book) == len(expected_book)
            and all(same_sheet(a, b) for a, b in zip(result_book, expected_book, strict=True))
        )
    return float(all(_rule_holds(rule, result_book, expected_book) for rule in rules))


def sheet_cells(context: TaskContext, spec: Mapping[str, Any]) -> dict[str, str] | None:
    """The listed cells (`cells`: ["D2", ...]) of sheet `sheet_idx` (default 0) of
    the workbook at `path`, as Gnumeric shows them; None when the file is missing.
    For check_direct_json_object and friends."""
    path = context.path(str(spec["path"]))
    if not path.is_file():
        return None
    sheets = read_workbook(path)
    index = int(spec.get("sheet_idx", 0))
    if not 0 <= index < len(sheets):
        raise SpreadsheetError(f"{path}: no sheet {index} (it has {len(sheets)})")
    return {str(c): cell(sheets[index], str(c)) for c in spec["cells"]}


def _check_cells(spec: Mapping[str, Any]) -> str:
    cells = spec.get("cells")
    if not isinstance(cells, list) or not cells or not all(isinstance(c, str) for c in cells):
        return f'`cells` must be a non-empty list of coordinates like "D2", got {cells!r}'
    return ""


METRICS: Mapping[str, Callable[..., float]] = {"compare_table": compare_table}
GETTERS: Mapping[str, Getter] = {
    "sheet_cells": Getter(sheet_cells, ("path", "cells"), _check_cells)
}
