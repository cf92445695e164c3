"""`holodesk eval tasks` end to end: a real holodeskd (the OCR policy), real Xvfb
displays with xterm, tasks in OSWorld's layout scored by their evaluators on the
files the agent's typing made. The run is killed after its first task and resumed:
what finished is kept as it was (nothing runs twice), the rest runs, and the
results, summary and report are in OSWorld's layout."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.eval.tasks import (
    Layout,
    RunLog,
    TaskEnvironment,
    read_suite,
    read_task,
    record_run,
    rollout_task,
    run_one,
    run_suite,
    task_reward,
)
from holodesk.client.exit_codes import ExitCode
from holodesk.client.rollouts import run_rollouts
from tests.client.eval.ocr_daemon import ocr_holodeskd

from .suite_files import write_suite

pytestmark = [pytest.mark.x11, pytest.mark.e2e, pytest.mark.timeout(180)]

HOLODESK = Path(sys.executable).with_name("holodesk")


def _terminal_task(task_id: str, word: str, **changes: Any) -> dict[str, Any]:
    """Type a command into xterm that writes `word` into a file of the HOME."""
    task: dict[str, Any] = {
        "id": task_id,
        "snapshot": "terminal",
        "instruction": f"In the terminal, write '{word}' into ~/{task_id}.txt.",
        "ocr_instruction": f'type "echo {word} > ~/{task_id}.txt"; press enter; wait 1',
        "source": "holodesk",
        "related_apps": ["xterm"],
        "config": [
            {"type": "launch", "parameters": {"command": ["xterm", "-geometry", "80x24+0+0"]}},
            {"type": "activate_window", "parameters": {"window_name": "xterm", "by_class": True}},
        ],
        "evaluator": {
            "func": "compare_text_file",
            "result": {"type": "vm_file", "path": f"/home/user/{task_id}.txt", "dest": "out.txt"},
            "expected": {"type": "cloud_file", "path": f"gold/{word}.txt", "dest": "gold.txt"},
        },
    }
    task.update(changes)
    return task


def _suite(root: Path) -> Path:
    infeasible = _terminal_task(
        "export-pdf",
        "x",
        instruction="Export the terminal's scrollback to PDF with its menu.",
        # The OCR baseline cannot find the menu, looks again, and gives up: a FAIL.
        ocr_instruction='click "Export to PDF"',
        evaluator={"func": "infeasible"},
    )
    suite = write_suite(
        root,
        {
            # The infeasible task runs second: its looking again gives the kill
            # seconds of margin to land while it runs.
            "terminal": [
                _terminal_task("first", "done"),
                infeasible,
                _terminal_task("second", "two"),
            ]
        },
    )
    for word in ("done", "two"):
        (root / "examples" / "terminal" / "gold").mkdir(exist_ok=True)
        (root / "examples" / "terminal" / "gold" / f"{word}.txt").write_text(f"{word}\n")
    return suite


@pytest.fixture(scope="module")
def daemon() -> Iterator[str]:
    with ocr_holodeskd() as address:
        yield address


def _marked(mark: str) -> list[int]:
    """Processes alive (not zombies) whose environment holds the run's mark."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            environ = (proc / "environ").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if mark.encode() in environ and state != "Z":
            found.append(int(proc.name))
    return found


def _command(suite: Path, address: str, out: Path, *more: str) -> list[str]:
    return [str(HOLODESK), "eval", "tasks", str(suite), "--server", address, "--out", str(out),
            "--width", "800", "--height", "600", *more]  # fmt: skip


def test_killed_midway_then_resumed_runs_nothing_twice(tmp_path: Path, daemon: str) -> None:
    suite = _suite(tmp_path / "suite")
    out = tmp_path / "results"
    mark = f"HOLODESK_EVAL_TEST={uuid.uuid4()}"
    env = {**os.environ, mark.split("=")[0]: mark.split("=")[1], "TMPDIR": str(tmp_path)}
    first_run = subprocess.Popen(
        _command(suite, daemon, out),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert first_run.stderr is not None
    for line in first_run.stderr:
        if line.startswith("terminal/first run 0:"):
            assert line.strip() == "terminal/first run 0: succeeded, score 1"
            break
    else:
        pytest.fail(f"the first task never finished: {first_run.communicate()}")
    first_run.send_signal(signal.SIGTERM)
    _, rest = first_run.communicate(timeout=60)
    assert first_run.returncode == ExitCode.CANCELLED, rest
    assert "finished runs are kept; --resume continues" in rest
    assert _marked(mark) == []  # every app, X server and bus of the run ended with it

    base = out / "holodesk" / "screenshot" / "ocr" / "terminal"
    first = base / "first"
    assert (first / "result.txt").read_text() == "1.0\n"
    kept = {p.name: p.stat().st_mtime_ns for p in first.iterdir()}
    first_session = json.loads((first / "run.json").read_text())["session_id"]
    assert not (base / "export-pdf" / "result.txt").exists()

    # Without --resume a second run refuses to mix its results with these.
    refused = subprocess.run(_command(suite, daemon, out), env=env, capture_output=True, text=True)
    assert refused.returncode == ExitCode.USAGE
    assert "pass --resume" in refused.stderr

    resumed = subprocess.run(
        _command(suite, daemon, out, "--resume"), env=env, capture_output=True, text=True
    )
    assert resumed.returncode == ExitCode.SUCCEEDED, resumed.stderr
    assert "terminal/first run" not in resumed.stderr  # not run again
    assert "terminal/second run 0: succeeded, score 1" in resumed.stderr
    assert "terminal/export-pdf run 0: failed, score 1" in resumed.stderr
    assert {p.name: p.stat().st_mtime_ns for p in first.iterdir()} == kept
    assert _marked(mark) == []

    # OSWorld's layout: traj.jsonl (a line per step), a PNG per step, result.txt.
    sessions = {first_session}
    for task_id, score in (("first", 1.0), ("second", 1.0), ("export-pdf", 1.0)):
        folder = base / task_id
        assert float((folder / "result.txt").read_text()) == score
        steps = [json.loads(line) for line in (folder / "traj.jsonl").read_text().splitlines()]
        run = json.loads((folder / "run.json").read_text())
        assert len(steps) == run["steps"] > 0
        for step in steps:
            assert (folder / step["screenshot_file"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert step["screenshot_file"].startswith(f"step_{step['step_num']}_")
        sessions.add(run["session_id"])
        if task_id == "export-pdf":
            assert steps[-1]["action"] == "FAIL"
            assert steps[-1]["done"]
            assert run["outcome"] == "failed"
        else:
            word = "done" if task_id == "first" else "two"
            assert steps[0]["action"] == f"type 'echo {word} > ~/{task_id}.txt'"
            assert run["note"] == "compare_text_file: 1"
    assert len(sessions) == 3

    summary = json.loads((base.parent / "summary.json").read_text())
    assert summary["all"]["tasks"] == 3
    assert summary["all"]["runs"] == 3
    assert summary["all"]["success_rate"] == 1.0
    assert summary["all"]["left_out"] == 0
    assert "terminal  3      3" in resumed.stdout  # the printed table
    report = (base.parent / "report.html").read_text()
    assert report.count("<tr class='pass'>") == 3
    assert report.count("data:image/jpeg;base64,") == sum(
        len((base / t / "traj.jsonl").read_text().splitlines())
        for t in ("first", "second", "export-pdf")
    )


def test_k_repeats_each_in_their_own_folder(tmp_path: Path, daemon: str) -> None:
    root = _suite(tmp_path / "suite")
    suite = read_suite(root, instruction_field="ocr_instruction")
    only = type(suite)(suite.root, tuple(t for t in suite.tasks if t.id == "second"))
    layout = Layout(tmp_path / "results", "ocr", k=2)
    run_log = asyncio.run(
        run_suite(daemon, only, layout, environments=2, instruction_field="ocr_instruction")
    )
    assert sorted(r for _, r, _ in run_log.scored) == [0, 1]
    folder = layout.task_dir(only.tasks[0])
    assert (folder / "run_0" / "result.txt").read_text() == "1.0\n"
    assert (folder / "run_1" / "result.txt").read_text() == "1.0\n"
    assert (folder / "result.txt").read_text() == "1.0\n"  # the mean, for show_result.py
    environments = {json.loads((folder / f"run_{r}" / "run.json").read_text())["environment"]
                    for r in (0, 1)}  # fmt: skip
    assert environments == {"env-0", "env-1"}  # both ran at once, one each
    assert layout.todo(only.tasks[0]) == []


def test_evaluators_are_run_rollouts_rewards(tmp_path: Path, daemon: str) -> None:
    root = _suite(tmp_path / "suite")
    task = read_task(root / "examples" / "terminal" / "second.json", "terminal")
    with TaskEnvironment(width=800, height=600, workdir=tmp_path) as environment:
        (trajectory,) = asyncio.run(
            run_rollouts(
                daemon,
                [rollout_task(task, instruction_field="ocr_instruction")],
                [environment],
                reward=task_reward(task),
                max_steps=15,
            )
        )
    assert trajectory.reward is not None
    assert trajectory.reward.reward == 1.0
    assert trajectory.reward.success
    assert trajectory.reward.note == "compare_text_file: 1"


def test_one_run_where_the_desktop_is_recorded_where_the_results_are(
    tmp_path: Path, daemon: str
) -> None:
    """The seam a pool of remote desktops uses: run_one beside the desktop, record_run
    with the Trajectory it returns."""
    root = _suite(tmp_path / "suite")
    task = read_task(root / "examples" / "terminal" / "first.json", "terminal")
    rollout = rollout_task(task, instruction_field="ocr_instruction", max_steps=15)
    with TaskEnvironment(width=800, height=600, workdir=tmp_path) as environment:
        trajectory = asyncio.run(run_one(daemon, rollout, environment))
    layout = Layout(tmp_path / "results", "ocr")
    run_log = RunLog()
    record_run(layout, trajectory, run_log)
    assert run_log.scored == [(task, 0, 1.0)]
    assert (layout.task_dir(task) / "result.txt").read_text() == "1.0\n"
    assert len(list(layout.task_dir(task).glob("step_*.png"))) == len(trajectory.steps)
