"""Four of the bundled suite's tasks, one per app, through `holodesk eval tasks` with a
real holodeskd (the OCR default, no model): xterm, mousepad, gnumeric and Chromium
each start on a fresh Xvfb with a fresh HOME, the OCR baseline carries out the
task's `ocr_instruction`, and the evaluator reads what the app left behind.

The scores asserted are the ones the OCR baseline gets every time on these tasks
(type-and-press in a terminal, a click on a cell then keys, a click on a link, and
the infeasible task it gives up on). The whole suite's rate is a benchmark figure
(tests/bench/bench_task_suite.py), never asserted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.client.eval.tasks.command import BUNDLED
from holodesk.client.exit_codes import ExitCode
from tests.client.eval.ocr_daemon import ocr_holodeskd

pytestmark = [pytest.mark.x11, pytest.mark.e2e, pytest.mark.timeout(240)]

HOLODESK = Path(sys.executable).with_name("holodesk")
# (domain, task id, score the OCR baseline gets, how its session ends)
RUNS = (
    ("terminal", "terminal-count-lines", 1.0, "succeeded"),
    ("spreadsheet", "sheet-fix-stock", 1.0, "succeeded"),
    ("browser", "browser-opening-hours", 1.0, "succeeded"),
    ("text_editor", "editor-encrypted-pdf", 1.0, "failed"),  # infeasible: it gives up
)


@pytest.fixture(scope="module")
def daemon() -> Iterator[str]:
    with ocr_holodeskd() as address:
        yield address


def _suite_of_four(root: Path) -> Path:
    """The bundled suite as shipped, with an index naming the four tasks."""
    suite = root / "bundled"
    shutil.copytree(BUNDLED, suite)
    index: dict[str, list[str]] = {}
    for domain, task_id, _, _ in RUNS:
        index.setdefault(domain, []).append(task_id)
    (suite / "four.json").write_text(json.dumps(index))
    return suite


def test_four_bundled_tasks_end_to_end_with_the_ocr_default(tmp_path: Path, daemon: str) -> None:
    suite = _suite_of_four(tmp_path)
    out = tmp_path / "results"
    ran = subprocess.run(
        [
            str(HOLODESK),
            "eval",
            "tasks",
            str(suite),
            "--index",
            "four.json",
            "--server",
            daemon,
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=200,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert ran.returncode == ExitCode.SUCCEEDED, ran.stderr
    assert "4 task(s) x 1, 1 environment(s), 15 steps each, policy ocr (ocr_instruction)" in (
        ran.stderr
    )

    # OSWorld's layout: <out>/<action space>/<observation>/<model>/<domain>/<id>/
    model = out / "holodesk" / "screenshot" / "ocr"
    for domain, task_id, score, outcome in RUNS:
        folder = model / domain / task_id
        assert f"{domain}/{task_id} run 0: {outcome}, score {score:g}" in ran.stderr
        assert float((folder / "result.txt").read_text()) == score, (task_id, ran.stderr)
        run = json.loads((folder / "run.json").read_text())
        assert run["outcome"] == outcome
        steps = [json.loads(line) for line in (folder / "traj.jsonl").read_text().splitlines()]
        assert len(steps) == run["steps"] > 0
        for step in steps:
            assert (folder / step["screenshot_file"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if outcome == "failed":
            assert steps[-1]["action"] == "FAIL"
            assert run["note"] == "infeasible, and the agent failed on purpose"
        else:
            assert steps[-1]["action"] == "DONE"

    summary = json.loads((model / "summary.json").read_text())
    assert summary["all"]["tasks"] == summary["all"]["runs"] == 4
    assert summary["all"]["success_rate"] == 1.0
    assert sorted(d["domain"] for d in summary["domains"]) == sorted(d for d, *_ in RUNS)
    assert all(d["tasks"] == 1 and d["left_out"] == 0 for d in summary["domains"])
    assert (model / "report.html").is_file()
