"""bench_task_suite in --quick mode (the terminal tasks, 1 and 2 environments), so it
cannot rot: it runs end to end and writes its figures, each against its same-run
baseline. How fast, and how many tasks succeeded, is never asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.bench_task_suite import main

pytestmark = [pytest.mark.x11, pytest.mark.e2e, pytest.mark.timeout(300)]


def test_task_suite_quick(tmp_path: Path) -> None:
    assert main(["--quick", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "bench_task_suite.json").read_text())
    assert data["command"] == "uv run python -m tests.bench.bench_task_suite --quick"
    assert (tmp_path / "bench_task_suite.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    names = {f["name"]: f for f in data["figures"]}
    speed = names["tasks per hour, 2 environments"]
    assert speed["baseline_name"] == "1 environment"
    assert speed["ratio"] == pytest.approx(speed["value"] / speed["baseline"])
    assert 0 <= names["success rate, OCR default, 1 environment"]["value"] <= 100
    for envs in ("1", "2"):
        run = data["data"]["runs"][envs]
        assert f"--envs {envs} --domain terminal" in run["command"]
        assert run["summary"]["all"]["runs"] == run["summary"]["all"]["tasks"] == 6
        # The run's own results stay beside the figures, in OSWorld's layout.
        model = tmp_path / "bench_task_suite" / f"envs-{envs}" / "holodesk" / "screenshot" / "ocr"
        assert (model / "summary.json").is_file()
        assert (model / "terminal" / "terminal-count-lines" / "result.txt").is_file()
