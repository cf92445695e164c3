"""TaskEnvironment on real Xvfb displays: a fresh display, HOME and D-Bus bus per task,
config steps run against them (`~` and /home/user are the task's HOME), every process
a step starts ended at reset and at close, and a failing step named."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.eval.tasks import TaskEnvironment, read_task, rollout_task
from holodesk.client.eval.tasks.processes import MARKER_VARIABLE, marked_processes
from holodesk.client.eval.tasks.setup import SetupError

pytestmark = [pytest.mark.x11]


def _task(folder: Path, task_id: str, config: list[dict[str, Any]]) -> Any:
    raw = {
        "id": task_id,
        "instruction": "nothing",
        "config": config,
        "evaluator": {"func": "infeasible"},
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{task_id}.json").write_text(json.dumps(raw))
    return read_task(folder / f"{task_id}.json", "os")


def _alive(group: int) -> bool:
    """A process of the group runs (zombies, which a container's init may never reap,
    are dead)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


def _windows(display: str, wm_class: str) -> list[str]:
    env = {**os.environ, "DISPLAY": display}
    ran = subprocess.run(
        ["xdotool", "search", "--class", wm_class], env=env, capture_output=True, text=True
    )
    return ran.stdout.split()


def test_every_task_gets_a_fresh_desktop_and_leaves_nothing_behind(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    (suite / "files").mkdir(parents=True)
    (suite / "files" / "start.txt").write_text("from the suite\n")
    first = _task(
        suite,
        "first",
        [
            {"type": "launch", "parameters": {"command": ["xterm"]}},
            {"type": "activate_window", "parameters": {"window_name": "xterm", "by_class": True}},
            # A shell whose children live on: the whole group belongs to the environment.
            {"type": "launch", "parameters": {"command": "sleep 300 & sleep 301", "shell": True}},
            # One that leaves its group (as xterm's shell does): found by its marker.
            {"type": "launch", "parameters": {"command": ["setsid", "-f", "sleep", "302"]}},
            {
                "type": "download",
                "parameters": {"files": [{"url": "files/start.txt", "path": "~/Desktop/a.txt"}]},
            },
            {
                "type": "execute",
                "parameters": {"command": "echo $HOME > /home/user/where.txt", "shell": True},
            },
        ],
    )
    second = _task(suite, "second", [{"type": "sleep", "parameters": {"seconds": 0}}])
    with TaskEnvironment(width=800, height=600, workdir=tmp_path) as environment:
        environment.reset(rollout_task(first)).close()
        context = environment.context
        home = context.home
        assert home.is_relative_to(tmp_path)
        assert (home / "Desktop" / "a.txt").read_text() == "from the suite\n"
        assert (home / "where.txt").read_text() == f"{home}\n"
        assert context.env()["XDG_RUNTIME_DIR"] == str(home.parent / "runtime")
        assert "XDG_CONFIG_HOME" not in context.env()
        assert _windows(context.display, "xterm")
        assert context.bus.startswith("unix:path=")
        groups = context.processes.group_ids
        assert len(groups) == 4  # dbus-daemon, xterm, the shell, setsid (execute ended)
        first_bus = context.bus
        marker = context.processes.marker
        assert len(marked_processes(MARKER_VARIABLE, marker)) >= 6  # + xterm's shell, sleeps

        environment.reset(rollout_task(second)).close()
        fresh = environment.context
        assert fresh.home != home
        assert not home.exists()
        assert list(fresh.home.iterdir()) == []
        assert fresh.bus != first_bus
        assert not _windows(fresh.display, "xterm")  # a new X server: no old window
        assert not any(_alive(g) for g in groups)
        assert marked_processes(MARKER_VARIABLE, marker) == []
        last_groups = fresh.processes.group_ids
    assert not any(_alive(g) for g in last_groups)
    assert not fresh.home.exists()


def test_a_failing_step_names_the_task_and_the_step(tmp_path: Path) -> None:
    task = _task(
        tmp_path / "suite",
        "broken",
        [
            {"type": "sleep", "parameters": {"seconds": 0}},
            {"type": "launch", "parameters": {"command": ["no-such-app-here", "--x"]}},
        ],
    )
    with (
        TaskEnvironment(width=640, height=480, workdir=tmp_path) as environment,
        pytest.raises(SetupError) as raised,
    ):
        environment.reset(rollout_task(task))
    assert str(raised.value) == (
        "task broken: config step 2 (launch) failed: 'no-such-app-here' is not installed "
        "(not found on PATH)"
    )


def test_close_ends_a_process_that_ignores_sigterm(tmp_path: Path) -> None:
    task = _task(
        tmp_path / "suite",
        "stubborn",
        [
            {
                "type": "launch",
                "parameters": {"command": "trap '' TERM; sleep 300 & wait", "shell": True},
            }
        ],
    )
    environment = TaskEnvironment(width=640, height=480, workdir=tmp_path)
    environment.reset(rollout_task(task)).close()
    groups = environment.context.processes.group_ids
    assert all(_alive(g) for g in groups)
    environment.close()  # SIGTERM is ignored: after the grace period, SIGKILL
    assert not any(_alive(g) for g in groups)


def test_open_execute_until_and_close_window(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    (suite / "files").mkdir(parents=True)
    (suite / "files" / "notes.txt").write_text("some notes\n")
    task = _task(
        suite,
        "apps",
        [
            {
                "type": "download",
                "parameters": {
                    "files": [{"url": (suite / "files" / "notes.txt").as_uri(), "path": "~/n.txt"}]
                },
            },
            {"type": "open", "parameters": {"path": "~/n.txt"}},
            {
                "type": "activate_window",
                "parameters": {"window_name": "mousepad", "by_class": True},
            },
            {"type": "open", "parameters": {"path": "/home/user"}},
            {"type": "activate_window", "parameters": {"window_name": "xterm", "by_class": True}},
            {"type": "close_window", "parameters": {"window_name": "xterm", "by_class": True}},
            # Something appears later: `until` runs the command again until it matches.
            {
                "type": "launch",
                "parameters": {"command": "sleep 1; echo ok > ~/flag", "shell": True},
            },
            {
                "type": "execute",
                "parameters": {
                    "command": "cat ~/flag",
                    "shell": True,
                    "stdout": "flag.out",
                    "until": {"returncode": 0, "stdout": "ok"},
                },
            },
        ],
    )
    with TaskEnvironment(width=800, height=600, workdir=tmp_path) as environment:
        environment.reset(rollout_task(task)).close()
        context = environment.context
        assert _windows(context.display, "mousepad")
        assert not _windows(context.display, "xterm")  # closed by close_window
        assert (context.cache / "flag.out").read_text() == "ok\n"


def test_task_reward_refuses_an_environment_without_a_task_state() -> None:
    """OSWorld evaluators read a TaskEnvironment's state; any other environment is a
    TypeError naming it, not a score."""
    import asyncio

    from holodesk.client.eval.tasks import task_reward
    from holodesk.client.rollouts import Finished, XvfbEnvironment

    # Refused before the trajectory or the backend is read.
    finished = Finished(None, XvfbEnvironment(name="plain"), None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a XvfbEnvironment's"):
        asyncio.run(task_reward()(finished))  # type: ignore[arg-type]
