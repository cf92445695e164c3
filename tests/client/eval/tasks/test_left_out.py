"""Runs that never really ran get no score: a set-up step that fails, a daemon that
cannot be reached. Each is named, counted as left out (never as a failure), has no
result.txt, and runs again on --resume; the exit status says which it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from holodesk.client.cli import main
from holodesk.client.exit_codes import ExitCode

from .suite_files import os_task, write_suite

pytestmark = [pytest.mark.x11]


def _summary(out: Path) -> dict[str, object]:
    summary = json.loads((out / "holodesk/screenshot/ocr/summary.json").read_text())
    assert isinstance(summary, dict)
    return summary["all"]  # type: ignore[no-any-return]


def _run(suite: Path, out: Path, *more: str) -> list[str]:
    return ["eval", "tasks", str(suite), "--server", "127.0.0.1:9", "--out", str(out),
            "--instruction-field", "instruction", "--policy", "ocr", *more]  # fmt: skip


def test_a_failing_set_up_is_named_left_out_and_tried_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = os_task("broken", config=[{"type": "launch", "parameters": {"command": "no-app-x"}}])
    suite = write_suite(tmp_path / "suite", {"os": [broken]})
    out = tmp_path / "out"
    assert main(_run(suite, out)) == ExitCode.FAILED
    err = capsys.readouterr().err
    assert (
        "not scored: os/broken run 0: environment env-0 could not be reset: task broken: "
        "config step 1 (launch) failed: 'no-app-x' is not installed (not found on PATH)"
    ) in err
    folder = out / "holodesk/screenshot/ocr/os/broken"
    assert not (folder / "result.txt").exists()
    assert "config step 1 (launch) failed" in (folder / "error.txt").read_text()
    assert _summary(out) == {
        "domain": "all",
        "tasks": 1,
        "runs": 0,
        "left_out": 1,
        "success_rate": None,
        "mean_score": None,
        "pass_at_k": None,
        "mean_steps": None,
        "mean_seconds": None,
        "mean_tokens": None,
    }
    assert main(_run(suite, out, "--resume")) == ExitCode.FAILED
    assert "os/broken run 0: error, not scored" in capsys.readouterr().err  # tried again


def test_an_unreachable_daemon_leaves_runs_out_with_exit_5(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "suite", {"os": [os_task("fine", config=[])]})
    out = tmp_path / "out"
    assert main(_run(suite, out)) == ExitCode.DAEMON_ERROR
    err = capsys.readouterr().err
    assert "os/fine run 0: error, not scored" in err
    assert "not scored: os/fine run 0: could not reach the daemon" in err
    assert _summary(out)["left_out"] == 1
