"""Drivers the Ray tests run inside their network namespace (netns.py); each writes
what it saw as JSON for the test to check.

    python -m tests.client.ray.scenarios NAME OUT.json [ARGS]
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import psutil  # type: ignore[import-untyped]
from grpc_health.v1 import health_pb2, health_pb2_grpc

from holodesk.client.rollouts.ray_pool import EnvironmentSpec, Lost, PoolItem, RayPool
from holodesk.client.rollouts.ray_pool.loading import import_ray
from holodesk.client.rollouts.trajectory import Trajectory
from holodesk.proto.v1 import control_pb2, control_pb2_grpc
from tests.client.ray.apps import form_environment, form_task, submitted_name
from tests.client.ray.netns import DAEMON, HEAD_ADDRESS, WORKER_LABEL

A = EnvironmentSpec(form_environment, count=1, name="a", resources={"desktop_a": 1})


def b_spec(count: int) -> EnvironmentSpec:
    """Pinned to the worker node by its label alone (a is pinned by a resource)."""
    return EnvironmentSpec(
        form_environment, count=count, name="b", label_selector={WORKER_LABEL: "b"}
    )


async def wait_serving() -> None:
    async with grpc.aio.insecure_channel(DAEMON) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = await stub.Check(health_pb2.HealthCheckRequest(), timeout=5)
                if answer.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the daemon never served")
            await asyncio.sleep(0.2)


async def sessions() -> set[str]:
    async with grpc.aio.insecure_channel(DAEMON) as channel:
        stub = control_pb2_grpc.ControlServiceStub(channel)
        answer = await stub.ListSessions(control_pb2.ListSessionsRequest(), timeout=10)
        return {s.session_id for s in answer.sessions}


def item_json(item: PoolItem) -> dict[str, Any]:
    if isinstance(item, Lost):
        return {
            "kind": "lost",
            "name": item.task.metadata["name"],
            "sample": item.sample,
            "environment": item.environment,
            "reason": item.reason,
            "attempt": item.attempt,
            "retrying": item.retrying,
        }
    assert isinstance(item, Trajectory)
    return {
        "kind": "trajectory",
        "name": item.task.metadata["name"],
        "sample": item.sample,
        "environment": item.environment,
        "outcome": item.outcome.name,
        "reason": item.reason,
        "answer": item.answer,
        "success": item.reward.success if item.reward else None,
        "note": item.reward.note if item.reward else "",
        "session_id": item.session_id,
    }


def pool_json(pool: RayPool) -> dict[str, Any]:
    letters = {}
    for node in import_ray().nodes():
        for resource in node["Resources"]:
            if resource.startswith("desktop_"):
                letters[node["NodeID"]] = resource.removeprefix("desktop_")
    return {
        "environments": {e.name: letters.get(e.place.node_id, "?") for e in pool.environments},
        "counts": dataclasses.asdict(pool.counts),
    }


def gated(names: list[str], gate_dir: Path, block_on: str) -> list[Any]:
    return [form_task(n, block_on=block_on, gate_dir=str(gate_dir)) for n in names]


async def wait_for(predicate: Callable[[], bool], what: str, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def pinned_then_node_lost(out: Path) -> dict[str, Any]:
    """Environments pinned to each node do their rollouts there; then the worker
    node's raylet is SIGKILLed while two rollouts are mid-session on it."""
    await wait_serving()
    result: dict[str, Any] = {}
    async with RayPool(DAEMON, [A, b_spec(2)], address=HEAD_ADDRESS) as pool:
        result["placed"] = pool_json(pool)["environments"]
        names = ["ada", "grace", "edsger", "barbara", "alan", "donald"]
        run = pool.rollouts([form_task(n) for n in names], reward=submitted_name)
        # A caller that holds on to an item stalls nothing: the environments that free
        # up meanwhile get the next rollouts, and all of them finish before it asks again.
        first = await anext(run)
        await wait_for(lambda: pool.counts.done == len(names), "all done while the caller holds")
        pinned = [first, *[item async for item in run]]
        result["pinned"] = [item_json(i) for i in pinned]
        result["pinned_placed"] = pool_json(pool)

        # Every task blocks on node b (its second screenshot never comes) and runs on a.
        gate = out.parent / "gate"
        gate.mkdir()
        items: list[PoolItem] = []
        lost_names = ["kay", "niklaus", "tony", "john"]
        run = pool.rollouts(gated(lost_names, gate, "b"), reward=submitted_name, retries=1)

        async def consume() -> None:
            async for item in run:
                items.append(item)

        consuming = asyncio.create_task(consume())
        # Both b environments hold a session, and a has done the other two: the
        # daemon's only sessions now are b's.
        await wait_for(lambda: len(list(gate.iterdir())) == 2 and len(items) == 2, "two blocked")
        before = await sessions()
        raylet = [
            p
            for p in psutil.process_iter()
            if p.name() == "raylet" and "desktop_b" in " ".join(p.cmdline())
        ]
        assert len(raylet) == 1, raylet
        killed_at = time.monotonic()
        raylet[0].kill()
        ended_s = None
        while ended_s is None and time.monotonic() - killed_at < 60:
            if not (before & await sessions()):
                ended_s = time.monotonic() - killed_at
            else:
                await asyncio.sleep(0.05)
        await consuming
        result["node_lost"] = {
            "items": [item_json(i) for i in items],
            "blocked_sessions": len(before),
            "daemon_sessions_ended_s": ended_s,
            **pool_json(pool),
        }
    return result


async def hung(out: Path) -> dict[str, Any]:
    """One environment: a rollout that hangs past the time limit is killed and its
    environment replaced; the next task runs on the replacement."""
    await wait_serving()
    gate = out.parent / "gate-hung"
    gate.mkdir()
    tasks = [*gated(["hung"], gate, "any"), form_task("after")]
    async with RayPool(DAEMON, [A], address=HEAD_ADDRESS) as pool:
        first = pool.environments[0]
        items = [item async for item in pool.rollouts(tasks, reward=submitted_name, time_limit_s=8)]
        return {
            "first": first.name,
            "first_cookie": first.place.cookie,
            "items": [item_json(i) for i in items],
            **pool_json(pool),
        }


async def driver_killed(out: Path) -> dict[str, Any]:
    """Starts rollouts that block on both nodes, says so in OUT.ready, and waits to be
    SIGKILLed by the test."""
    await wait_serving()
    gate = out.parent / "gate-driver"
    gate.mkdir()
    pool = RayPool(DAEMON, [A, b_spec(1)], address=HEAD_ADDRESS)
    await pool.start()
    run = pool.rollouts(gated(["x", "y"], gate, "any"), reward=submitted_name)
    consuming: asyncio.Task[PoolItem] = asyncio.create_task(anext(run))  # type: ignore[arg-type]
    await wait_for(lambda: len(list(gate.iterdir())) == 2, "two blocked")
    ready = {
        "pid": os.getpid(),
        "cookies": [e.place.cookie for e in pool.environments],
        **pool_json(pool),
    }
    out.with_suffix(".ready").write_text(json.dumps(ready))
    await consuming  # never: the test kills this process
    return ready


def terminal_task(task_id: str, word: str) -> dict[str, Any]:
    """An OSWorld-format task: type a command into xterm that writes `word` into a file,
    scored by compare_text_file against a gold file (as tests/client/eval/tasks')."""
    return {
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


def write_terminal_suite(root: Path) -> Path:
    """Two terminal tasks ("first", "two") with their gold files, in OSWorld's layout."""
    from tests.client.eval.tasks.suite_files import write_suite

    write_suite(root, {"terminal": [terminal_task("first", "done"), terminal_task("two", "two")]})
    for word in ("done", "two"):
        (root / "examples" / "terminal" / "gold" / f"{word}.txt").parent.mkdir(exist_ok=True)
        (root / "examples" / "terminal" / "gold" / f"{word}.txt").write_text(f"{word}\n")
    return root


async def suite(out: Path) -> dict[str, Any]:
    """An `eval tasks` suite on the Ray pool: each run reset, played and scored by its
    evaluator in the actor; its folder written here in OSWorld's layout."""
    from holodesk.client.eval.tasks import Layout, read_suite
    from holodesk.client.rollouts.ray_pool.suites import TaskEnvironments, run_suite_on_pool

    await wait_serving()
    root = write_terminal_suite(out.parent / "suite")
    layout = Layout(out.parent / "results", model="ocr")
    spec = EnvironmentSpec(TaskEnvironments(800, 600), 2, "task", {"desktop_a": 1})
    async with RayPool(DAEMON, [spec], address=HEAD_ADDRESS) as pool:
        run_log = await run_suite_on_pool(
            pool, read_suite(root), layout, instruction_field="ocr_instruction"
        )
    return {
        "scored": sorted((t.id, repeat, score) for t, repeat, score in run_log.scored),
        "left_out": [lo.why for lo in run_log.left_out],
        "results": {
            p.parent.name: p.read_text() for p in sorted(layout.base.glob("*/*/result.txt"))
        },
        "steps": {
            p.parent.name: len(p.read_text().splitlines())
            for p in layout.base.glob("*/*/traj.jsonl")
        },
    }


SCENARIOS: dict[str, Callable[[Path], Coroutine[Any, Any, dict[str, Any]]]] = {
    "pinned_then_node_lost": pinned_then_node_lost,
    "hung": hung,
    "driver_killed": driver_killed,
    "suite": suite,
}


def main() -> None:
    name, out = sys.argv[1], Path(sys.argv[2])
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    result = asyncio.run(SCENARIOS[name](out))
    out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
