"""gnumeric.py's compare_table and sheet_cells on workbooks saved by ssconvert: the
rules OSWorld writes, values as Gnumeric computes them, and what is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from holodesk.client.eval.tasks import evaluate
from holodesk.client.eval.tasks.context import TaskContext
from holodesk.client.eval.tasks.gnumeric import (
    SpreadsheetError,
    cell,
    compare_table,
    read_workbook,
    sheet_cells,
)
from holodesk.client.eval.tasks.processes import OwnedProcesses

from .states import workbook
from .suite import task


def _book(folder: Path, name: str, rows: list[str]) -> str:
    workbook(name, rows)(folder)
    return str(folder / name)


def _half_written(whole: str, path: Path) -> Path:
    """The first part of a saved workbook, as a save cut short leaves it."""
    path.write_bytes(Path(whole).read_bytes()[:400])
    return path


def _check(coordinate: str, method: str, ref: Any) -> dict[str, Any]:
    return {
        "type": "check_cell",
        "coordinate": coordinate,
        "props": {"value": {"method": method, "ref": ref}},
    }


def test_formulas_are_read_as_gnumeric_computes_them(tmp_path: Path) -> None:
    path = _book(tmp_path, "b.gnumeric", ["a,b,sum", "1.5,2,=A2+B2", "x,,=A2*10"])
    (sheet,) = read_workbook(path)
    assert cell(sheet, "C2") == "3.5"
    assert cell(sheet, "$C$3") == "15"
    assert cell(sheet, "B3") == ""
    assert cell(sheet, "Z99") == ""  # beyond the data: empty, as in the app


@pytest.mark.parametrize(
    ("rule", "holds"),
    [
        (_check("C2", "eq", 3.5), True),
        (_check("C2", "eq", "3.50"), True),  # numbers compare as numbers
        (_check("C2", "ne", 3.5), False),
        (_check("C2", "approx:0.1", 3.45), True),
        (_check("C2", "approx:0.01", 3.45), False),
        (_check("C2", "gt", 3), True),
        (_check("C2", "le", 3), False),
        (_check("A1", "re", "^a$"), True),
        (_check("A1", "eq", "A"), False),  # texts are compared exactly
        (_check("A1", "lt", 3), False),  # a text is never less than a number
    ],
)
def test_check_cell_methods(tmp_path: Path, rule: dict[str, Any], holds: bool) -> None:
    path = _book(tmp_path, "b.gnumeric", ["a,b,sum", "1.5,2,=A2+B2"])
    assert compare_table(path, rules=[rule]) == float(holds)


def test_sheet_data_compares_with_an_expected_csv(tmp_path: Path) -> None:
    result = _book(tmp_path, "r.gnumeric", ["x,y", "1,=A2*2", ",,"])
    expected = tmp_path / "e.csv"
    expected.write_text("x,y\n1.0,2\n")
    rule = {"type": "sheet_data", "sheet_idx0": "RI0", "sheet_idx1": "EI0"}
    assert compare_table(result, str(expected), rules=[rule]) == 1.0
    assert compare_table(result, str(expected)) == 1.0  # no rules: every sheet
    expected.write_text("x,y\n1,3\n")
    assert compare_table(result, str(expected), rules=[rule]) == 0.0


def test_a_missing_result_scores_0_and_bad_rules_are_refused(tmp_path: Path) -> None:
    assert compare_table(None, rules=[]) == 0.0
    assert compare_table(str(tmp_path / "nothing.gnumeric"), rules=[]) == 0.0
    path = _book(tmp_path, "b.gnumeric", ["a", "1"])
    with pytest.raises(SpreadsheetError, match="unknown rule type 'sheet_name'"):
        compare_table(path, rules=[{"type": "sheet_name"}])
    with pytest.raises(SpreadsheetError, match="the workbook has 1 sheet"):
        compare_table(path, rules=[{**_check("A1", "eq", "a"), "sheet_idx": 3}])
    with pytest.raises(SpreadsheetError, match="names the expected workbook, and there is none"):
        compare_table(path, rules=[{"type": "sheet_data", "sheet_idx1": "EI0"}])
    with pytest.raises(SpreadsheetError, match="'D0' is not a cell coordinate"):
        compare_table(path, rules=[_check("D0", "eq", 1)])
    with pytest.raises(SpreadsheetError, match="only the `value` prop"):
        compare_table(path, rules=[{**_check("A1", "eq", 1), "props": {"font_bold": True}}])
    with pytest.raises(SpreadsheetError, match="ssconvert could not read it"):
        read_workbook(_half_written(path, tmp_path / "half.gnumeric"))


def test_an_unreadable_workbook_scores_0_with_the_reason(tmp_path: Path) -> None:
    """What a metric raises is a 0 with the error in the note, never a crash or a 1."""
    home = tmp_path / "home"
    home.mkdir()
    whole = _book(tmp_path, "whole.gnumeric", ["Item,Stock", "Apple,30", "Pear,12", "Plum,18"])
    _half_written(whole, home / "inventory.gnumeric")
    found = task("sheet-fix-stock")
    processes = OwnedProcesses(tmp_path / "processes.log")
    context = TaskContext(
        display=":0", home=home, cache=tmp_path, task_folder=found.folder, processes=processes
    )
    score = evaluate(found, context, failed_on_purpose=False)
    assert score.score == 0.0
    assert "ssconvert could not read it" in score.note


def test_sheet_cells_gives_the_cells_asked_for(tmp_path: Path) -> None:
    _book(tmp_path, "s.gnumeric", ["n,v", "a,=1/4"])
    processes = OwnedProcesses(tmp_path / "processes.log")
    context = TaskContext(
        display=":0", home=tmp_path, cache=tmp_path, task_folder=tmp_path, processes=processes
    )
    spec = {"type": "sheet_cells", "path": "~/s.gnumeric", "cells": ["B2", "A2", "C9"]}
    assert sheet_cells(context, spec) == {"B2": "0.25", "A2": "a", "C9": ""}
    assert sheet_cells(context, {**spec, "path": "~/none.gnumeric"}) is None
    with pytest.raises(SpreadsheetError, match="no sheet 2"):
        sheet_cells(context, {**spec, "sheet_idx": 2})
