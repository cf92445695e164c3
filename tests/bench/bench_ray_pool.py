"""Rollouts on Ray actors against rollouts in this process, and how many desktops one
machine sustains (issue 32).

    uv run python -m tests.bench.bench_ray_pool            # full run, ~4 min
    uv run python -m tests.bench.bench_ray_pool --quick    # smoke run, ~1.5 min

Everything runs inside a network namespace of its own (tests/client/ray/netns.py: a
two-node Ray cluster on this machine, holodeskd with the OCR policy on 127.0.0.1),
as Ray may not send traffic anywhere but loopback here. The environments are the
Ray tests' (tests/client/ray/apps.py): a private Xvfb with the demo's Tk form app,
the task typing a name and submitting it, the reward reading what the app got.

Measured in the same run:

- throughput: the same rollouts with N environments on the Ray pool (actors split
  over the two nodes) and on the in-process pool (LocalPool, i.e. run_rollouts):
  rollouts per minute, and utilisation, the share of each environment's time spent
  in a rollout (reset, session, reward: the sum of Trajectory.seconds over N x the
  wall time). The Ray pool's start (actors and desktops up) is its own figure.
- desktops: k desktops (Xvfb + Tk app) each running a session at once, k = 1, 2,
  4, 8 (in process): the median step period (time between consecutive screenshots
  of one session) against k = 1; and where the CPU goes in that time (Xvfb, the
  apps, holodeskd, the client and its environments' threads), from /proc.

Reported, never asserted: this 2-core machine is shared, so figures move from run
to run; the ratios are taken in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.bench.common import Figure, Report, parser, reproduce_command, series

NAME = "bench_ray_pool"
MODULE = f"tests.bench.{NAME}"

# --- inside the namespace ------------------------------------------------------------------


def _task(name: str, repeats: int) -> Any:
    from tests.client.ray.apps import form_task

    task = form_task(name)
    if repeats <= 1:
        return task
    steps = "; ".join([f'type "{name}" into "Name"; click "Submit"'] * repeats)
    from holodesk.client.rollouts import RolloutTask

    return RolloutTask(
        f'{steps}; answer "signed up {name}"', max_steps=4 * repeats, metadata=task.metadata
    )


async def _throughput(kind: str, envs: int, rollouts: int) -> dict[str, Any]:
    from holodesk.client.rollouts.ray_pool import EnvironmentSpec, LocalPool, RayPool
    from tests.client.ray.apps import form_environment, submitted_name
    from tests.client.ray.netns import DAEMON, HEAD_ADDRESS

    started = time.monotonic()
    pool: RayPool | LocalPool
    if kind == "ray":
        half = envs // 2
        specs = [
            EnvironmentSpec(form_environment, envs - half, "a", {"desktop_a": 1}),
            *([EnvironmentSpec(form_environment, half, "b", {"desktop_b": 1})] if half else []),
        ]
        pool = RayPool(DAEMON, specs, address=HEAD_ADDRESS)
    else:
        pool = LocalPool(DAEMON, [EnvironmentSpec(form_environment, envs, "local")])
    await pool.start()
    start_s = time.monotonic() - started
    tasks = [_task(f"user{i}", 1) for i in range(rollouts)]
    began = time.monotonic()
    busy = 0.0
    ok = 0
    try:
        async for item in pool.rollouts(tasks, reward=submitted_name):
            busy += getattr(item, "seconds", 0.0)
            reward = getattr(item, "reward", None)
            ok += bool(reward is not None and reward.success)
    finally:
        wall = time.monotonic() - began
        await pool.close()
    return {
        "kind": kind,
        "envs": envs,
        "rollouts": rollouts,
        "succeeded": ok,
        "start_s": start_s,
        "wall_s": wall,
        "per_minute": 60 * rollouts / wall,
        "utilisation": busy / (envs * wall),
    }


_KINDS = (
    ("Xvfb", lambda name, line: name == "Xvfb"),
    ("apps", lambda name, line: "holodesk.client.demo.form_app" in line),
    # The daemon with its OCR (tesseract) children: the policy's cost.
    ("holodeskd", lambda name, line: "holodesk.daemon.cli" in line),
    ("client", lambda name, line: "tests.bench.bench_ray_pool" in line),
    ("Ray, idle", lambda name, line: "ray" in line),
)


class _CpuMeter:
    """CPU seconds (and the last RSS) per kind of process over a phase, polled from
    /proc, of this network namespace's processes only (other work on the machine is
    not ours to count)."""

    def __init__(self) -> None:
        import psutil  # type: ignore[import-untyped]

        self._psutil = psutil
        self._namespace = os.readlink("/proc/self/ns/net")
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.rss: dict[int, int] = {}
        self.kind: dict[int, str] = {}
        self.poll()
        self.first = dict(self.last)

    def poll(self) -> None:
        self.rss = {}
        for process in self._psutil.process_iter():
            try:
                if os.readlink(f"/proc/{process.pid}/ns/net") != self._namespace:
                    continue
                if process.pid not in self.kind:
                    line = " ".join(process.cmdline())
                    self.kind[process.pid] = next(
                        (k for k, test in _KINDS if test(process.name(), line)), "other"
                    )
                kind = self.kind[process.pid]
                if self.kind.get(process.ppid()) == "holodeskd":
                    continue  # the daemon's OCR workers: counted in its children's time
                times = process.cpu_times()
                used = times.user + times.system
                if kind == "holodeskd":
                    used += times.children_user + times.children_system
                self.last[process.pid] = used
                self.rss[process.pid] = process.memory_info().rss
            except (OSError, self._psutil.Error):
                continue

    def rss_mib(self, kind: str) -> float:
        return sum(v for p, v in self.rss.items() if self.kind.get(p) == kind) / 2**20

    def totals(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for pid, seconds in self.last.items():
            kind = self.kind.get(pid, "other")
            out[kind] = out.get(kind, 0.0) + seconds - self.first.get(pid, 0.0)
        return out


async def _desktops(k: int, repeats: int) -> dict[str, Any]:
    from holodesk.client.rollouts.ray_pool import EnvironmentSpec, LocalPool
    from tests.client.ray.apps import form_environment, submitted_name
    from tests.client.ray.netns import DAEMON

    async with LocalPool(DAEMON, [EnvironmentSpec(form_environment, k, "d")]) as pool:
        meter = _CpuMeter()
        polling = True

        async def poll() -> None:
            while polling:
                await asyncio.to_thread(meter.poll)
                await asyncio.sleep(0.25)

        poller = asyncio.create_task(poll())
        began = time.monotonic()
        periods: list[float] = []
        ok = 0
        async for item in pool.rollouts(
            [_task(f"k{k}n{i}", repeats) for i in range(k)], reward=submitted_name
        ):
            steps = getattr(item, "steps", ())
            times = [s.frame.captured_at for s in steps if s.frame is not None]
            periods += [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
            reward = getattr(item, "reward", None)
            ok += bool(reward is not None and reward.success)
        wall = time.monotonic() - began
        polling = False
        await poller
        meter.poll()  # the desktops are still up: their memory too
        memory = {kind: meter.rss_mib(kind) for kind in ("Xvfb", "apps")}
    return {
        "k": k,
        "succeeded": ok,
        "wall_s": wall,
        "step_periods_s": periods,
        "step_median_s": statistics.median(periods) if periods else float("nan"),
        "cpu_s": meter.totals(),
        "rss_mib": memory,
    }


async def inside(quick: bool) -> dict[str, Any]:
    from tests.client.ray.scenarios import wait_serving

    await wait_serving()
    envs = (2,) if quick else (2, 4)
    per_env = 2 if quick else 3
    results: dict[str, Any] = {"throughput": [], "desktops": []}
    for n in envs:
        for kind in ("local", "ray"):
            results["throughput"].append(await _throughput(kind, n, n * per_env))
    for k in (1, 2) if quick else (1, 2, 4, 8):
        results["desktops"].append(await _desktops(k, 2 if quick else 3))
    return results


# --- outside: the cluster, the report --------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    result = parser(MODULE, __doc__ or "")
    result.add_argument("--inside", type=Path, help=argparse.SUPPRESS)
    return result


def add_figures(report: Report, results: dict[str, Any]) -> None:
    throughput = {(r["kind"], r["envs"]): r for r in results["throughput"]}
    for (kind, envs), run in sorted(throughput.items()):
        if kind != "ray":
            continue
        local = throughput[("local", envs)]
        report.add(
            Figure(
                f"rollouts per minute, {envs} environments, Ray pool",
                run["per_minute"],
                "/min",
                local["per_minute"],
                "in-process pool",
                better="higher",
                note=f"{run['succeeded']}/{run['rollouts']} vs "
                f"{local['succeeded']}/{local['rollouts']} rewarded",
            )
        )
        report.add(
            Figure(
                f"environment utilisation, {envs} environments, Ray pool",
                100 * run["utilisation"],
                "%",
                100 * local["utilisation"],
                "in-process pool",
                better="higher",
            )
        )
        report.add(
            Figure(
                f"pool start, {envs} environments, Ray pool",
                run["start_s"],
                "s",
                local["start_s"],
                "in-process pool",
            )
        )
    desktops = results["desktops"]
    base = desktops[0]["step_median_s"]
    for run in desktops:
        cpu = run["cpu_s"]
        spent = ", ".join(f"{k} {v:.1f}" for k, v in sorted(cpu.items(), key=lambda kv: -kv[1]))
        report.add(
            Figure(
                f"step period p50, {run['k']} desktops at once",
                1000 * run["step_median_s"],
                "ms",
                1000 * base,
                "1 desktop",
                note=f"{run['succeeded']}/{run['k']} rewarded; CPU s over "
                f"{run['wall_s']:.1f} s: {spent}; RSS per desktop: Xvfb "
                f"{run['rss_mib']['Xvfb'] / run['k']:.0f} MiB, app "
                f"{run['rss_mib']['apps'] / run['k']:.0f} MiB",
            )
        )
    report.data = {
        "throughput": results["throughput"],
        "desktops": [{**d, "step_periods_s": series(d["step_periods_s"])} for d in desktops],
    }


def plot(results: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    for kind, color in (("local", "tab:gray"), ("ray", "tab:blue")):
        runs = [r for r in results["throughput"] if r["kind"] == kind]
        left.plot(
            [r["envs"] for r in runs], [r["per_minute"] for r in runs], "o-", color=color,
            label=f"{'in-process' if kind == 'local' else 'Ray'} pool",
        )  # fmt: skip
    left.set_xlabel("environments")
    left.set_ylabel("rollouts per minute")
    left.legend()
    desktops = results["desktops"]
    ks = [d["k"] for d in desktops]
    right.plot(ks, [1000 * d["step_median_s"] for d in desktops], "o-", label="step p50 (ms)")
    right.set_xlabel("desktops with a session at once")
    right.set_ylabel("step period p50 (ms)")
    right.set_xscale("log", base=2)
    right.legend()
    figure.suptitle("Ray pool vs in-process pool; desktops one machine sustains", fontsize=9)
    figure.tight_layout()
    return figure


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(arguments)
    if args.inside is not None:
        args.inside.write_text(json.dumps(asyncio.run(inside(args.quick))))
        return 0
    from tests.client.ray.netns import Cluster

    report = Report(NAME, "Ray pool", reproduce_command(MODULE, arguments), args.quick)
    report.header()
    cluster = Cluster()
    try:
        cluster.start()
        out = cluster.dir / "bench.json"
        command = [sys.executable, "-m", MODULE, "--inside", str(out)]
        cluster.run([*command, *(["--quick"] if args.quick else [])], timeout_s=1800)
        results = json.loads(out.read_text())
    finally:
        cluster.stop()
    add_figures(report, results)
    report.finish(plot(results), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
