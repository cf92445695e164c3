"""Task states written straight into a task's HOME, one that should pass each
task's evaluator and one that should fail it: the files a user's app would have
saved (spreadsheets saved by Gnumeric's own ssconvert, formulas and all).

A state is `write(home)`; STATES maps a task id to (passing, failing). The browser
tasks' states are pages driven in a real Chromium (test_evaluators_browser.py)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

State = Callable[[Path], None]


def text(name: str, content: str, mode: int = 0o644) -> State:
    """`name` (relative to HOME) holding `content`."""

    def write(home: Path) -> None:
        path = home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        path.chmod(mode)

    return write


def folder(name: str) -> State:
    def write(home: Path) -> None:
        (home / name).mkdir(parents=True, exist_ok=True)

    return write


def both(*states: State) -> State:
    def write(home: Path) -> None:
        for state in states:
            state(home)

    return write


def workbook(name: str, rows: list[str]) -> State:
    """A .gnumeric workbook saved by ssconvert from CSV rows (a cell "=..." is a formula)."""

    def write(home: Path) -> None:
        with tempfile.TemporaryDirectory(prefix="holodesk-test-sheet-") as scratch:
            source = Path(scratch) / "sheet.csv"
            source.write_text("\n".join(rows) + "\n")
            env = {**os.environ, "HOME": scratch, "GSETTINGS_BACKEND": "memory"}
            env.pop("DISPLAY", None)
            subprocess.run(
                ["ssconvert", str(source), str(home / name)],
                env=env,
                check=True,
                capture_output=True,
                timeout=60,
            )

    return write


NOTHING: State = both()

# Mousepad writes no newline after the last line.
STATES: dict[str, tuple[State, State]] = {
    "terminal-greeting-file": (
        text("greeting.txt", "Hello, world\n"),
        text("greeting.txt", "Hello world\n"),
    ),
    "terminal-make-folders": (
        folder("projects/website/images"),
        folder("projects/website"),
    ),
    "terminal-count-lines": (
        text("count.txt", "12\n"),
        text("count.txt", "12 cities.txt\n"),  # `wc -l cities.txt` names the file too
    ),
    "terminal-sort-names": (
        text("sorted.txt", "Alan\nBarbara\nDonald\nEdsger\nGrace\nMargaret\n"),
        text("sorted.txt", "Margaret\nGrace\nEdsger\nDonald\nBarbara\nAlan\n"),
    ),
    "terminal-rename-draft": (
        text("docs/report-final.txt", "Quarterly report, first draft.\n"),
        both(  # copied, not renamed
            text("docs/draft.txt", "Quarterly report, first draft.\n"),
            text("docs/report-final.txt", "Quarterly report, first draft.\n"),
        ),
    ),
    "terminal-make-executable": (
        text("backup.sh", "#!/bin/sh\n", 0o755),
        text("backup.sh", "#!/bin/sh\n", 0o644),
    ),
    "editor-append-line": (
        text("errands.txt", "Buy milk\nCall Ada\nWater the plants"),
        text("errands.txt", "Buy milk\nWater the plants\nCall Ada\n"),
    ),
    "editor-replace-word": (
        text(
            "colours.txt",
            "The color of the sky\nA color chart for the kitchen\nBright, but not too colorful\n",
        ),
        text(  # only the first one replaced
            "colours.txt",
            "The color of the sky\nA colour chart for the kitchen\nBright, but not too colourful\n",
        ),
    ),
    "editor-save-as": (
        text("shopping.txt", "Shopping list"),
        text("Untitled 1", "Shopping list"),
    ),
    "editor-delete-first-line": (
        text("memo.txt", "Dear team,\nThe meeting moves to Friday.\n"),
        text("memo.txt", "DRAFT - do not send\nDear team,\nThe meeting moves to Friday.\n"),
    ),
    "editor-insert-heading": (
        text("agenda.txt", "# Meeting notes\nBudget review\nHiring plan"),
        text("agenda.txt", "Budget review\nHiring plan\n# Meeting notes"),
    ),
    "sheet-total-column": (
        workbook(
            "prices.gnumeric",
            ["Item,Price,Qty,Total", "Apple,1.5,4,=B2*C2", "Pear,2,3,=B3*C3"],
        ),
        workbook(
            "prices.gnumeric",
            ["Item,Price,Qty,Total", "Apple,1.5,4,=B2*C2", "Pear,2,3,=B3+C3"],
        ),
    ),
    "sheet-sum-budget": (
        workbook(
            "budget.gnumeric",
            [
                "Expense,Amount",
                "Rent,950",
                "Food,320",
                "Travel,85",
                "Phone,40",
                "Total,=SUM(B2:B5)",
            ],
        ),
        workbook(
            "budget.gnumeric",
            [
                "Expense,Amount",
                "Rent,950",
                "Food,320",
                "Travel,85",
                "Phone,40",
                "Total,=SUM(B2:B4)",
            ],
        ),
    ),
    "sheet-fix-stock": (
        workbook("inventory.gnumeric", ["Item,Stock", "Apple,30", "Pear,12", "Plum,18"]),
        workbook("inventory.gnumeric", ["Item,Stock", "Apple,12", "Pear,12", "Plum,18"]),
    ),
    "sheet-add-row": (
        workbook(
            "cities.gnumeric", ["City,Population", "Oslo,709000", "Bern,134000", "Lima,10000000"]
        ),
        workbook(
            "cities.gnumeric", ["City,Population", "Oslo,709000", "Bern,134000", "Lima,1000000"]
        ),
    ),
    "sheet-average-score": (
        workbook(
            "scores.gnumeric",
            ["Name,Score", "Ada,91", "Alan,78", "Grace,85", "Edsger,70", ",=AVERAGE(B2:B5)"],
        ),
        workbook(
            "scores.gnumeric",
            ["Name,Score", "Ada,91", "Alan,78", "Grace,85", "Edsger,70", ",=AVERAGE(B2:B4)"],
        ),
    ),
    "sheet-rename-header": (
        workbook("orders.gnumeric", ["Product,Quantity", "Pens,12", "Paper,5"]),
        workbook("orders.gnumeric", ["Product,Qty", "Pens,12", "Paper,5"]),
    ),
}
