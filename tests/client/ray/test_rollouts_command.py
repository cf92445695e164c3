"""`holodesk rollouts` and LocalPool without a cluster: the task file's errors name the
file, line and field; bad arguments exit 2 with the reason; LocalPool yields every
trajectory of a real daemon's sessions as it finishes (the cluster runs are in
test_ray_pool.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from holodesk.client.cli import main
from holodesk.client.events import Outcome
from holodesk.client.exit_codes import ExitCode
from holodesk.client.rollouts.ray_pool import EnvironmentSpec, LocalPool, PoolItem
from holodesk.client.rollouts.task_file import TaskFileError, read_tasks
from holodesk.client.rollouts.trajectory import Trajectory
from tests.client.test_rollouts import ANSWER, CLICK, FakeEnvironment, policy
from tests.daemon.support import running_daemon


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "tasks.jsonl:2: not JSON"),
        ('["a"]', "tasks.jsonl:2: a task is a JSON object, not list"),
        ('{"url": "x"}', "tasks.jsonl:2: 'task' must be a non-empty string"),
        ('{"task": "t", "steps": 3}', "tasks.jsonl:2: unknown field(s) 'steps'"),
        ('{"task": "t", "max_steps": -1}', "tasks.jsonl:2: 'max_steps' must be a whole number"),
        ('{"task": "t", "max_steps": true}', "tasks.jsonl:2: 'max_steps' must be a whole number"),
        ('{"task": "t", "metadata": [1]}', "tasks.jsonl:2: 'metadata' must be a JSON object"),
        ('{"task": "t", "url": 5}', "tasks.jsonl:2: 'url' must be a string"),
    ],
)
def test_a_bad_task_line_names_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"task": "fine"}\n' + line + "\n")
    with pytest.raises(TaskFileError) as caught:
        read_tasks(path)
    assert message in str(caught.value)


def test_a_task_file_reads_every_field(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    row = {"task": "fill", "url": "http://127.0.0.1/", "max_steps": 3, "metadata": {"k": [1]}}
    path.write_text(json.dumps(row) + "\n\n" + json.dumps({"task": "two"}) + "\n")
    first, second = read_tasks(path)
    assert (first.task, first.url, first.max_steps, dict(first.metadata)) == (
        "fill", "http://127.0.0.1/", 3, {"k": [1]},
    )  # fmt: skip
    assert second.task == "two"
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(TaskFileError, match="no tasks"):
        read_tasks(tmp_path / "empty.jsonl")


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--app", "true", "--time-limit", "5"], "give --ray ADDRESS"),
        (["--app", "true", "--resources", '{"desktop": 1}'], "give --ray ADDRESS"),
        (["--environment", "no_such_module_here:make"], "cannot import 'no_such_module_here'"),
        (["--environment", "json"], "write it as MODULE:NAME"),
        (["--environment", "json:nothing_here"], "json has no 'nothing_here'"),
        (["--app", "true", "--reward", "json:__doc__"], "is not callable"),
        (["--app", "true", "--size", "big"], "--size is WIDTHxHEIGHT"),
        (["--app", "true", "--ca-cert", "/nonexistent/ca.pem"], "--ca-cert /nonexistent/ca.pem"),
        (["--vnc", "127.0.0.1:1", "--envs", "2"], "--vnc names 1 desktop(s), one environment"),
        (["--vnc", "h:1", "--vnc", "h:1"], "a --vnc address is given twice"),
        (["--vnc", "h:abc"], "--vnc 'h:abc': the display must be a number"),
        (["--app", "true", "--vnc-reset", "x"], "--vnc-reset goes with --vnc"),
        (["--app", "true", "--sandbox-apps", "x"], "--sandbox-apps goes with --sandbox"),
        (["--url", "x", "--container-runtime", "x"], "--container-runtime goes with --sandbox"),
    ],
)
def test_bad_arguments_exit_2_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], says: str
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task": "t"}\n')
    assert main(["rollouts", str(tasks), "--server", "127.0.0.1:1", *extra]) == ExitCode.USAGE
    assert says in capsys.readouterr().err


def test_a_bad_resources_flag_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["rollouts", str(tmp_path / "t.jsonl"), "--app", "x", "--resources", '{"d": -1}']
    assert main(argv) == ExitCode.USAGE
    assert "positive amounts" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--ray", "127.0.0.1:1", "--resources", '{"desktop": -1}'], "positive amounts"),
        (["--ray", "127.0.0.1:1", "--resources", "{desktop"], "--resources is not JSON"),
        (["--ray", "127.0.0.1:1", "--labels", "node"], "a label is KEY=VALUE, got 'node'"),
        (["--resources", '{"desktop": 1}'], "give --ray ADDRESS"),
    ],
)
def test_eval_tasks_bad_ray_flags_exit_2_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], says: str
) -> None:
    """`holodesk eval tasks` parses --ray's flags as holodesk rollouts does (ray_args.py),
    before any daemon or cluster is asked."""
    argv = ["eval", "tasks", "bundled", "--server", "127.0.0.1:1", "--out", str(tmp_path)]
    assert main([*argv, *extra]) == ExitCode.USAGE
    assert says in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def fake_environment(name: str) -> FakeEnvironment:
    return FakeEnvironment(name)


async def test_the_local_pool_yields_each_trajectory_and_counts() -> None:
    spec = EnvironmentSpec(fake_environment, count=2, name="fake")
    items: list[PoolItem] = []
    async with (
        running_daemon([policy([CLICK, ANSWER])]) as daemon,
        LocalPool(daemon.running.address, [spec]) as pool,
    ):
        assert pool.environment_names == ["fake-1", "fake-2"]
        with pytest.raises(ValueError, match="use the Ray pool"):
            pool.rollouts(["t"], time_limit_s=5)
        async for item in pool.rollouts(["one", "two", "three"], n=2, reward=lambda f: True):
            items.append(item)
    assert len(items) == 6
    assert all(isinstance(i, Trajectory) for i in items)
    trajectories = [i for i in items if isinstance(i, Trajectory)]
    assert sorted((t.task.task, t.sample) for t in trajectories) == sorted(
        (task, s) for task in ("one", "two", "three") for s in (0, 1)
    )
    assert all(t.outcome is Outcome.SUCCEEDED for t in trajectories)
    assert {t.environment for t in trajectories} == {"fake-1", "fake-2"}
    assert (pool.counts.done, pool.counts.lost, pool.counts.retried) == (6, 0, 0)


def test_an_environment_spec_refuses_what_ray_could_not_place() -> None:
    with pytest.raises(ValueError, match="count must be 1 or more"):
        EnvironmentSpec(fake_environment, count=0)
    with pytest.raises(ValueError, match="resource 'desktop' needs a positive amount"):
        EnvironmentSpec(fake_environment, resources={"desktop": 0})
