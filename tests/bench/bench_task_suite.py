"""The bundled task suite with the OCR default: success rate and tasks per hour, with 1
environment and with N at once (issue 31).

    uv run python -m tests.bench.bench_task_suite              # the whole suite, ~5 min
    uv run python -m tests.bench.bench_task_suite --envs 4     # N = 4
    uv run python -m tests.bench.bench_task_suite --quick      # the terminal tasks, ~1 min

A real holodeskd with the OCR policy (no model, no GPU) in a process of its own, and
`holodesk eval tasks bundled` run twice against it, as a user runs it: once with one
environment, once with N (each environment a fresh Xvfb and HOME per task, the apps
started by the task's config, the evaluator reading the app's state). The command of
each run is printed.

Figures: the success rate (every task run once; the OCR baseline fails some tasks for
good: the rate is a figure, never a threshold), per domain; tasks per hour (tasks
finished over the run's wall time, set-up and scoring included) with N environments
against 1 (the baseline, same run). Nothing is asserted.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.bench.common import Figure, Report, parser, reproduce_command, results_dir

NAME = "bench_task_suite"
MODULE = "tests.bench.bench_task_suite"
BIN = Path(sys.executable).parent
READY = "listening on "


@dataclass(frozen=True)
class SuiteRun:
    """One `holodesk eval tasks` run: its command, wall time and summary.json."""

    envs: int
    command: list[str]
    seconds: float
    summary: dict[str, Any]

    @property
    def runs(self) -> int:
        return int(self.summary["all"]["runs"])

    @property
    def success_rate(self) -> float:
        return float(self.summary["all"]["success_rate"])

    @property
    def tasks_per_hour(self) -> float:
        return 3600 * self.runs / self.seconds


def build_parser() -> Any:
    result = parser(MODULE, __doc__ or "")
    result.add_argument("--envs", type=int, default=2, help="N: environments at once (default 2)")
    return result


@contextmanager
def ocr_daemon() -> Iterator[str]:
    """holodeskd --policy ocr on a free loopback port; its address."""
    process = subprocess.Popen(
        [str(BIN / "holodeskd"), "--listen", "127.0.0.1:0", "--policy", "ocr"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if READY not in line:
            raise RuntimeError(f"holodeskd did not start: {line!r}")
        yield line.rsplit(" ", 1)[-1].strip()
    finally:
        process.terminate()
        process.wait(timeout=30)


def run_suite(address: str, envs: int, out: Path, domains: Sequence[str]) -> SuiteRun:
    command = [str(BIN / "holodesk"), "eval", "tasks", "bundled", "--server", address,
               "--out", str(out), "--envs", str(envs)]  # fmt: skip
    for domain in domains:
        command += ["--domain", domain]
    shown = shlex.join(["uv", "run", "holodesk", *command[1:]])
    print(f"   running: {shown}", flush=True)
    started = time.monotonic()
    ran = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if ran.returncode != 0:
        raise RuntimeError(f"{shown} exited {ran.returncode}: {ran.stderr[-2000:]}")
    for line in ran.stderr.splitlines():
        if " run " in line and ": " in line:
            print(f"     {line}", flush=True)
    summary_path = out / "holodesk" / "screenshot" / "ocr" / "summary.json"
    return SuiteRun(envs, command, seconds, json.loads(summary_path.read_text()))


def add_figures(report: Report, one: SuiteRun, many: SuiteRun) -> None:
    n = many.envs
    report.add(
        Figure(
            "success rate, OCR default, 1 environment",
            100 * one.success_rate,
            "%",
            better="higher",
            note=f"{round(one.success_rate * one.runs)} of {one.runs} tasks",
        )
    )
    report.add(
        Figure(
            f"success rate, OCR default, {n} environments",
            100 * many.success_rate,
            "%",
            100 * one.success_rate,
            "1 environment",
            better="higher",
            note=f"{round(many.success_rate * many.runs)} of {many.runs} tasks",
        )
    )
    for domain in many.summary["domains"]:
        first = next(d for d in one.summary["domains"] if d["domain"] == domain["domain"])
        report.add(
            Figure(
                f"success rate, {domain['domain']}, {n} environments",
                100 * domain["success_rate"],
                "%",
                100 * first["success_rate"],
                "1 environment",
                better="higher",
                note=f"{domain['tasks']} tasks, {domain['mean_steps']:.1f} steps, "
                f"{domain['mean_seconds']:.1f} s per run",
            )
        )
    report.add(
        Figure(
            "tasks per hour, 1 environment",
            one.tasks_per_hour,
            "tasks/h",
            better="higher",
            note=f"{one.runs} tasks in {one.seconds:.0f} s",
        )
    )
    report.add(
        Figure(
            f"tasks per hour, {n} environments",
            many.tasks_per_hour,
            "tasks/h",
            one.tasks_per_hour,
            "1 environment",
            better="higher",
            note=f"{many.runs} tasks in {many.seconds:.0f} s on {os.cpu_count()} cores",
        )
    )
    report.data["runs"] = {
        str(run.envs): {
            "command": shlex.join(["uv", "run", "holodesk", *run.command[1:]]),
            "seconds": run.seconds,
            "summary": run.summary,
        }
        for run in (one, many)
    }


def plot(report: Report, one: SuiteRun, many: SuiteRun) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (rates, speed) = plt.subplots(1, 2, figsize=(12, 4.4))
    domains = [d["domain"] for d in one.summary["domains"]] + ["all"]
    width = 0.38
    for offset, run in ((-width / 2, one), (width / 2, many)):
        by_domain = {d["domain"]: d["success_rate"] for d in run.summary["domains"]}
        by_domain["all"] = run.success_rate
        rates.bar(
            [i + offset for i in range(len(domains))],
            [100 * by_domain.get(d, 0.0) for d in domains],
            width,
            label=f"{run.envs} environment(s)",
        )
    rates.set_xticks(range(len(domains)), domains)
    rates.set_ylabel("success rate (%)")
    rates.set_ylim(0, 105)
    rates.set_title("bundled suite, OCR default")
    rates.legend(fontsize=8)
    speed.bar(
        [f"{one.envs} env", f"{many.envs} envs"],
        [one.tasks_per_hour, many.tasks_per_hour],
        color=["tab:gray", "tab:blue"],
    )
    speed.set_ylabel("tasks per hour")
    speed.set_title("throughput (wall time, set-up and scoring included)")
    figure.suptitle(f"bundled task suite — {report.command}", fontsize=9)
    figure.tight_layout()
    return figure


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(arguments)
    if args.envs < 2:
        raise SystemExit("--envs must be 2 or more (1 environment is the baseline)")
    report = Report(NAME, "bundled task suite", reproduce_command(MODULE, arguments), args.quick)
    report.header()
    domains = ["terminal"] if args.quick else []
    # The runs' results (trajectories, screenshots, report.html) stay for a look.
    runs = results_dir(args.out) / NAME
    shutil.rmtree(runs, ignore_errors=True)
    with ocr_daemon() as address:
        one = run_suite(address, 1, runs / "envs-1", domains)
        many = run_suite(address, args.envs, runs / f"envs-{args.envs}", domains)
    add_figures(report, one, many)
    report.finish(plot(report, one, many), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
