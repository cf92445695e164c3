"""The Ray pool on a real two-node Ray cluster (issue 32), inside a network namespace
of the test's own (netns.py): environments pinned to each node run real Tk apps on
real Xvfb displays against a real holodeskd (OCR policy); then the worker node's
raylet is SIGKILLed mid-rollout, an environment hangs, the driver is SIGKILLed.
Counts are exact and no desktop outlives its environment.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.exit_codes import ExitCode
from holodesk.client.rollouts import RolloutTask
from tests.client.environments.stand_in import install_stand_in
from tests.client.environments.typing_tasks import write_typing_tasks
from tests.client.ray.apps import form_task
from tests.client.ray.netns import DAEMON, HEAD_ADDRESS, RESUME_WINDOW_S, Cluster
from tests.client.ray.scenarios import write_terminal_suite
from tests.platform.vnc.servers import require

HOLODESK = Path(sys.executable).with_name("holodesk")

pytestmark = [pytest.mark.x11, pytest.mark.e2e, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    made = Cluster()
    try:
        made.start()
        yield made
    finally:
        made.stop()
    assert not made.processes(), "processes left in the test's namespace"


@pytest.fixture
def both_nodes(cluster: Cluster) -> Cluster:
    if not cluster.worker_alive():
        cluster.start_worker()
    return cluster


def by_name(items: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        grouped.setdefault(item["name"], []).append(item)
    return grouped


def test_a_driver_killed_with_sigkill_leaves_no_desktop(both_nodes: Cluster) -> None:
    driver = both_nodes.spawn(
        [sys.executable, "-m", "tests.client.ray.scenarios", "driver_killed",
         str(both_nodes.dir / "driver.json")],
        "driver.log",
    )  # fmt: skip
    ready_file = both_nodes.dir / "driver.ready"
    deadline = time.monotonic() + 120
    while not ready_file.exists():
        assert driver.poll() is None, both_nodes.log("driver.log")
        assert time.monotonic() < deadline, "the driver never got its rollouts going"
        time.sleep(0.1)
    ready = json.loads(ready_file.read_text())
    assert sorted(ready["environments"].values()) == ["a", "b"]
    # Two environments, each an Xvfb and a form app, each holding a session.
    assert len(both_nodes.desktops()) == 4, both_nodes.desktops()
    driver.send_signal(signal.SIGKILL)
    driver.wait(timeout=10)
    left = both_nodes.wait_for_no_desktops(timeout_s=30)
    assert left == [], left


def test_pinned_environments_then_a_lost_node(both_nodes: Cluster) -> None:
    result = both_nodes.scenario("pinned_then_node_lost")
    # Placement: a-* on the head (by its desktop_a resource), b-* on the worker (by its label).
    assert result["placed"] == {"a-1": "a", "b-1": "b", "b-2": "b"}
    pinned = result["pinned"]
    assert sorted(i["name"] for i in pinned) == [
        "ada",
        "alan",
        "barbara",
        "donald",
        "edsger",
        "grace",
    ]
    for item in pinned:
        assert item["kind"] == "trajectory"
        assert item["outcome"] == "SUCCEEDED", item
        assert item["success"], item["note"]
        # The reward ran in the actor, on the node its environment was pinned to.
        node = result["placed"][item["environment"]]
        assert item["note"].startswith(f"node={node} "), item
    assert {result["placed"][i["environment"]] for i in pinned} == {"a", "b"}

    lost = result["node_lost"]
    items = lost["items"]
    # Two rollouts were mid-session on b when it died: each reported lost once, with
    # Ray's reason, retried once on a, and finished there; the other two never left a.
    # (The pool's counts add up over its calls: 6 rollouts before these 4.)
    assert lost["counts"] == {
        "done": 6 + 4, "lost": 2, "retried": 2, "given_up": 0, "hung": 0, "replaced": 2,
    }  # fmt: skip
    grouped = by_name(items)
    assert sorted(grouped) == ["john", "kay", "niklaus", "tony"]
    losses = [i for i in items if i["kind"] == "lost"]
    assert len(losses) == 2
    for loss in losses:
        assert loss["environment"] in ("b-1", "b-2")
        assert loss["retrying"]
        assert loss["attempt"] == 1
        print(f"lost: {loss['reason']}")
        assert "died" in loss["reason"], loss["reason"]
        retried = grouped[loss["name"]]
        assert [i["kind"] for i in retried] == ["lost", "trajectory"]
    for name, group in grouped.items():
        finished = [i for i in group if i["kind"] == "trajectory"]
        assert len(finished) == 1, (name, group)  # never dropped, never twice
        assert finished[0]["outcome"] == "SUCCEEDED", finished[0]
        assert result["placed"].get(finished[0]["environment"], "a") == "a"
        assert finished[0]["note"].startswith("node=a ")
    # The daemon ended both orphaned sessions: their actors died with the node, their
    # connections closed with them, and the daemon's resume window ran out.
    print(
        f"the daemon ended the lost node's sessions {lost['daemon_sessions_ended_s']:.1f} s "
        f"after its raylet's SIGKILL (resume window {RESUME_WINDOW_S:g} s)"
    )
    assert lost["blocked_sessions"] == 2
    assert lost["daemon_sessions_ended_s"] is not None
    assert RESUME_WINDOW_S < lost["daemon_sessions_ended_s"] < RESUME_WINDOW_S + 15
    # b's replacements wait for a node with desktop_b; none was left running.
    assert set(lost["environments"]) == {"a-1"}
    assert both_nodes.wait_for_no_desktops() == []


def test_a_hung_environment_is_killed_and_replaced(cluster: Cluster) -> None:
    result = cluster.scenario("hung")
    assert result["first"] == "a-1"
    hung, after = result["items"]
    assert hung["kind"] == "lost"
    assert (hung["name"], hung["environment"], hung["retrying"]) == ("hung", "a-1", False)
    assert "time limit of 8 s" in hung["reason"]
    assert after["kind"] == "trajectory"
    assert (after["name"], after["environment"], after["outcome"]) == ("after", "a-2", "SUCCEEDED")
    assert result["counts"] == {
        "done": 1, "lost": 1, "retried": 0, "given_up": 1, "hung": 1, "replaced": 1,
    }  # fmt: skip
    assert cluster.wait_for_no_desktops() == []


def test_an_eval_tasks_suite_on_the_cluster(cluster: Cluster) -> None:
    result = cluster.scenario("suite")
    assert result["left_out"] == []
    assert result["scored"] == [["first", 0, 1.0], ["two", 0, 1.0]]
    assert result["results"] == {"first": "1.0\n", "two": "1.0\n"}
    assert all(count > 0 for count in result["steps"].values())
    assert cluster.wait_for_no_desktops() == []


def test_the_eval_tasks_command_on_the_cluster(cluster: Cluster) -> None:
    """`holodesk eval tasks SUITE --ray ...`: the suite's runs in actors on the head node
    (--resources), written in OSWorld's layout with the summary and report, exit 0."""
    root = write_terminal_suite(cluster.dir / "command-suite")
    out = cluster.dir / "command-results"
    argv = [
        str(HOLODESK), "eval", "tasks", str(root), "--server", DAEMON, "--out", str(out),
        "--envs", "2", "--width", "800", "--height", "600", "--model", "ocr",
        "--ray", HEAD_ADDRESS, "--resources", '{"desktop_a": 1}',
    ]  # fmt: skip
    done = subprocess.run(
        cluster.command(argv),
        env=cluster.env(),
        cwd=cluster.dir,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == ExitCode.SUCCEEDED, (done.stdout, done.stderr)
    for task in ("first", "two"):
        assert f"terminal/{task} run 0: " in done.stderr, done.stderr
    results = {p.parent.name: p.read_text() for p in out.glob("*/*/ocr/terminal/*/result.txt")}
    assert results == {"first": "1.0\n", "two": "1.0\n"}, (done.stdout, done.stderr)
    (summary_path,) = out.glob("*/*/ocr/summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["this_invocation"]["scored"] == 2
    assert "report: " in done.stdout
    assert cluster.wait_for_no_desktops() == []


def write_tasks(path: Path, names: list[str]) -> None:
    path.write_text("".join(json.dumps(asdict_task(form_task(n))) + "\n" for n in names))


def asdict_task(task: RolloutTask) -> dict[str, Any]:
    return {"task": task.task, "max_steps": task.max_steps, "metadata": dict(task.metadata)}


def rollouts_command(cluster: Cluster, argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cluster.command([str(HOLODESK), "rollouts", *argv]),
        env=cluster.env(),
        cwd=cluster.dir,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_command_on_the_cluster_and_in_process(cluster: Cluster) -> None:
    tasks = cluster.dir / "tasks.jsonl"
    write_tasks(tasks, ["ada", "grace", "edsger"])
    common = [
        str(tasks), "--server", DAEMON,
        "--environment", "tests.client.ray.apps:form_environment",
        "--reward", "tests.client.ray.apps:submitted_name", "--envs", "2",
    ]  # fmt: skip
    on_ray = ["--ray", HEAD_ADDRESS, "--resources", '{"desktop_a": 1}']
    for where, extra in (("ray", [*on_ray, "--retries", "1"]), ("local", [])):
        out, record = cluster.dir / f"{where}.jsonl", cluster.dir / f"{where}-recordings"
        argv = [*common, *extra, "--out", str(out), "--record", str(record)]
        done = rollouts_command(cluster, argv)
        assert done.returncode == 0, (where, done.stdout, done.stderr)
        assert "3 done, 0 lost, 0 retried, 0 given up, 3/3 succeeded" in done.stdout
        assert done.stderr.count("done  ") == 3, done.stderr
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        assert sorted(line["metadata"]["name"] for line in lines) == ["ada", "edsger", "grace"]
        for line in lines:
            assert line["kind"] == "trajectory"
            assert line["outcome"] == "SUCCEEDED"
            assert line["success"] is True, line["reward_note"]
            assert line["environment"] in ("env-1", "env-2")
            # On the cluster the reward ran on the head node (desktop_a); here in-process.
            assert line["reward_note"].startswith("node=a " if where == "ray" else "node= ")
            assert line["steps"]
        # --record: each session recorded by its environment, on its machine (this one).
        recorded = {
            json.loads(p.read_text())["session_id"] for p in record.glob("*/recording.json")
        }
        assert recorded == {line["session_id"] for line in lines}

    # A rollout that hangs past --time-limit with no retry left: lost for good, exit 6.
    write_tasks(tasks, ["alan"])
    with tasks.open("a") as more:
        gate = cluster.dir / "gate-command"
        gate.mkdir()
        hung = form_task("hung", block_on="any", gate_dir=str(gate))
        more.write(json.dumps(asdict_task(hung)) + "\n")
    out = cluster.dir / "lost.jsonl"
    argv = [*common[:-1], "1", *on_ray, "--time-limit", "8", "--out", str(out)]
    done = rollouts_command(cluster, argv)
    assert done.returncode == ExitCode.BACKEND_UNAVAILABLE, (done.stdout, done.stderr)
    assert "1 done, 1 lost, 0 retried, 1 given up, 1/2 succeeded" in done.stdout
    assert "ran past its time limit of 8 s" in done.stderr
    assert "(given up)" in done.stderr
    written = [json.loads(line) for line in out.read_text().splitlines()]
    kinds = sorted((line["kind"], line["metadata"]["name"]) for line in written)
    assert kinds == [("lost", "hung"), ("trajectory", "alan")]
    assert cluster.wait_for_no_desktops() == []


def test_sandbox_containers_on_the_cluster(cluster: Cluster) -> None:
    """Each rollout in a fresh sandbox container its actor starts (the stand-in
    runtime of tests/client/environments: no docker here) and drives over VNC."""
    require("Xvnc", "tigervnc-standalone-server")
    require("vncpasswd", "tigervnc-tools")
    folder = cluster.dir / "containers"
    folder.mkdir()
    runtime = install_stand_in(folder)
    tasks = write_typing_tasks(cluster.dir / "typing.jsonl", ["on-ray-1", "on-ray-2"])
    out = cluster.dir / "sandbox.jsonl"
    done = rollouts_command(
        cluster,
        [
            str(tasks), "--server", DAEMON, "--ray", HEAD_ADDRESS,
            "--resources", '{"desktop_a": 1}', "--out", str(out),
            "--sandbox", "--container-runtime", str(runtime.path), "--sandbox-apps", "xterm",
            "--size", "800x600", "--reward", "tests.client.environments.typing_tasks:typed_file",
        ],
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout, done.stderr)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((line["metadata"]["file"], line["reward"]) for line in lines) == [
        ("on-ray-1", 1.0), ("on-ray-2", 1.0),
    ]  # fmt: skip
    assert sum(call[0] == "run" for call in runtime.calls()) == 2
    assert runtime.containers() == [], "a container outlived its rollout"
