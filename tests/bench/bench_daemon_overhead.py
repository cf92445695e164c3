"""Daemon overhead: what the daemon adds to a step, against bare gRPC.

    uv run python -m tests.bench.bench_daemon_overhead            # full run, ~2 min
    uv run python -m tests.bench.bench_daemon_overhead --quick    # smoke run, ~20 s

Each step is what a client does: send an observation (a 1920x1080 text-dense PNG,
~300 KiB, plus the results of the last actions) and wait for the next actions. The
server runs in its own process on 127.0.0.1, so the client's CPU does not hide
the server's; the client sends pre-encoded frames and does nothing else.

- holodesk: the real daemon (interceptors, auth, metrics, session state, frame
  validation, conversions) with a policy that decides in zero time (one click).
- baseline: a bare grpc.aio echo service, same contract, same server options,
  same message sizes (a canned click per observation), no holodesk logic.

Figures: step latency p50/p99 at one session; aggregate steps/s and server CPU per
step with 100 and 1000 concurrent sessions (each on its own connection, up to
--channels), with every error counted. Targets (issue 9): p50 < 5 ms at one
session; >= 500 steps/s at 100 sessions; 1000 sessions with no error. The client
and the server share this machine's cores, so steps/s is bounded by both; the
server's CPU per step says what the daemon alone could do ("capacity": cores /
CPU per step).

Also measured (informational): the same step through a ModelPolicy whose engine
answers at once (--model-dialect, default holotron): the dialect's own work per
step (model images for the whole history window, prompt, parsing), which a real
model's step pays on top of the engine.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from typing import Any

from tests.bench.common import (
    Figure,
    Report,
    desktop_frames,
    kib,
    latency_summary,
    machine_info,
    parser,
    reproduce_command,
    series,
)
from tests.bench.daemon_proc import server_process
from tests.bench.load import FrameSource, LoadResult, run_latency, run_load

NAME = "bench_daemon_overhead"
MODULE = f"tests.bench.{NAME}"


def build_parser() -> Any:
    result = parser(MODULE, __doc__ or "")
    result.add_argument("--steps", type=int, default=300, help="measured steps at 1 session")
    result.add_argument(
        "--sessions",
        type=int,
        nargs="+",
        default=[100, 1000],
        help="concurrency levels for throughput (default 100 1000)",
    )
    result.add_argument("--seconds", type=float, default=10.0, help="measured window per level")
    result.add_argument("--warmup-s", type=float, default=2.0, help="unmeasured time per level")
    result.add_argument(
        "--channels", type=int, default=1000, help="connections at most (sessions share them)"
    )
    result.add_argument(
        "--model-dialect", default="holotron", help="dialect of the ModelPolicy run"
    )
    result.add_argument("--model-steps", type=int, default=20, help="steps of the ModelPolicy run")
    result.add_argument(
        "--server-cpus",
        type=int,
        nargs="*",
        default=None,
        help="pin the servers to these CPUs (default: no pinning)",
    )
    return result


async def measure(args: Any, report: Report) -> dict[str, Any]:
    frames = desktop_frames(1920, 1080, 3, "PNG")
    source = FrameSource(tuple(frames), 1920, 1080, "PNG")
    report.data["frame_bytes_mean"] = source.mean_bytes
    print(f"   frames: 1920x1080 PNG, {kib(source.mean_bytes):.0f} KiB on average", flush=True)
    results: dict[str, Any] = {"latency": {}, "load": {}}
    warmup_steps = max(3, args.steps // 10)
    with (
        server_process("echo", cpus=args.server_cpus) as echo,
        server_process("holodesk", cpus=args.server_cpus) as daemon,
    ):
        for server in (echo, daemon):
            latencies = await run_latency(
                server.address, source, steps=args.steps, warmup=warmup_steps
            )
            results["latency"][server.label] = latencies
        for sessions in args.sessions:
            for server in (echo, daemon):
                load = await run_load(
                    server.address,
                    source,
                    sessions=sessions,
                    seconds=args.seconds,
                    warmup_s=args.warmup_s,
                    channels=args.channels,
                    server_pid=server.pid,
                    prefix=f"c{sessions}-",
                )
                results["load"].setdefault(sessions, {})[server.label] = load
                print(
                    f"   {sessions:>5} sessions, {server.label:<28} {load.steps_per_s:8.1f} steps/s"
                    f"  errors {load.error_count}",
                    flush=True,
                )
        labels = (echo.label, daemon.label)
    if args.model_steps > 0:
        with server_process(
            "holodesk", policy="model", dialect=args.model_dialect, cpus=args.server_cpus
        ) as model:
            results["model"] = await run_latency(
                model.address, source, steps=args.model_steps, warmup=1
            )
            results["model_label"] = f"holodesk (ModelPolicy, {args.model_dialect} dialect)"
    results["labels"] = labels
    return results


def add_figures(args: Any, report: Report, results: dict[str, Any]) -> None:
    echo_label, daemon_label = results["labels"]
    echo = latency_summary(results["latency"][echo_label])
    daemon = latency_summary(results["latency"][daemon_label])
    baseline = "bare grpc.aio echo"
    report.data["latency_1_session"] = {"echo": echo, "holodesk": daemon}
    report.add(
        Figure(
            "step latency p50, 1 session",
            daemon["p50_ms"],
            "ms",
            echo["p50_ms"],
            baseline,
            target="< 5 ms",
            met=daemon["p50_ms"] < 5.0,
            note=f"daemon adds {daemon['p50_ms'] - echo['p50_ms']:.2f} ms",
        )
    )
    report.add(
        Figure(
            "step latency p99, 1 session",
            daemon["p99_ms"],
            "ms",
            echo["p99_ms"],
            baseline,
            note=f"daemon adds {daemon['p99_ms'] - echo['p99_ms']:.2f} ms",
        )
    )
    cores = machine_info()["cpus"] or 1
    loads: dict[int, dict[str, LoadResult]] = results["load"]
    report.data["load"] = {}
    for sessions, by_label in loads.items():
        bare, real = by_label[echo_label], by_label[daemon_label]
        report.data["load"][str(sessions)] = {
            "echo": _load_json(bare),
            "holodesk": _load_json(real),
        }
        at_100 = sessions == 100
        report.add(
            Figure(
                f"aggregate steps/s, {sessions} sessions",
                real.steps_per_s,
                "steps/s",
                bare.steps_per_s,
                baseline,
                better="higher",
                target=">= 500 steps/s" if at_100 else "",
                met=real.steps_per_s >= 500 if at_100 else None,
                note=f"{real.error_count} errors, {bare.error_count} for the baseline",
            )
        )
        daemon_cpu, echo_cpu = _cpu_ms_per_step(real), _cpu_ms_per_step(bare)
        if daemon_cpu is not None and echo_cpu is not None:
            report.add(
                Figure(
                    f"server CPU per step, {sessions} sessions",
                    daemon_cpu,
                    "ms",
                    echo_cpu,
                    baseline,
                    note=f"capacity on {cores} cores: {1000 * cores / daemon_cpu:,.0f} steps/s "
                    f"(baseline {1000 * cores / echo_cpu:,.0f})",
                )
            )
        many = sessions >= 1000
        report.add(
            Figure(
                f"errors, {sessions} sessions",
                float(real.error_count),
                "errors",
                float(bare.error_count),
                baseline,
                target="no error" if many else "",
                met=real.error_count == 0 if many else None,
                note="; ".join(f"{n}x {e}" for e, n in real.errors.most_common(3)),
            )
        )
    if "model" in results:
        model = latency_summary(results["model"])
        report.data["latency_1_session"]["model_policy"] = model
        report.add(
            Figure(
                "step latency p50, 1 session, ModelPolicy (0-latency engine)",
                model["p50_ms"],
                "ms",
                daemon["p50_ms"],
                "holodesk, instant policy",
                note=f"the {args.model_dialect} dialect's own work per step",
            )
        )


def _cpu_ms_per_step(load: LoadResult) -> float | None:
    if load.server_cpu_s is None or load.steps == 0:
        return None
    return 1000 * load.server_cpu_s / load.steps


def _load_json(load: LoadResult) -> dict[str, Any]:
    return {
        "sessions": load.sessions,
        "seconds": load.seconds,
        "steps": load.steps,
        "steps_per_s": load.steps_per_s,
        "server_cpu_s": load.server_cpu_s,
        "latency": latency_summary(load.latencies),
        "errors": dict(load.errors),
    }


def plot(report: Report, results: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    echo_label, daemon_label = results["labels"]
    figure, (left, middle, right) = plt.subplots(1, 3, figsize=(16, 4.8))
    for label, color in ((echo_label, "tab:gray"), (daemon_label, "tab:blue")):
        values = sorted(1000 * s for s in results["latency"][label])
        fractions = [(i + 1) / len(values) for i in range(len(values))]
        left.plot(values, fractions, label=label, color=color)
    left.axvline(5.0, color="tab:red", linestyle="--", linewidth=1, label="target p50 < 5 ms")
    left.set_xlabel("step latency, 1 session (ms)")
    left.set_ylabel("fraction of steps")
    left.set_xscale("log")
    left.legend(fontsize=8)
    left.set_title("1 session: latency CDF")

    levels = list(results["load"])
    positions = range(len(levels))
    width = 0.38
    loads: dict[int, dict[str, LoadResult]] = results["load"]
    for offset, label, color in (
        (-width / 2, echo_label, "tab:gray"),
        (width / 2, daemon_label, "tab:blue"),
    ):
        middle.bar(
            [p + offset for p in positions],
            [loads[n][label].steps_per_s for n in levels],
            width,
            label=label,
            color=color,
        )
        cpu = [_cpu_ms_per_step(loads[n][label]) or 0.0 for n in levels]
        right.bar([p + offset for p in positions], cpu, width, label=label, color=color)
    middle.axhline(500, color="tab:red", linestyle="--", linewidth=1, label="target at 100: 500")
    middle.set_xticks(list(positions), [f"{n} sessions" for n in levels])
    middle.set_ylabel("aggregate steps/s")
    middle.legend(fontsize=8)
    middle.set_title("throughput (client on the same cores)")
    right.set_xticks(list(positions), [f"{n} sessions" for n in levels])
    right.set_ylabel("server CPU per step (ms)")
    right.legend(fontsize=8)
    right.set_title("server CPU per step")
    figure.suptitle(
        f"daemon overhead vs bare gRPC (1920x1080 PNG frames) — {report.command}", fontsize=9
    )
    figure.tight_layout()
    return figure


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(arguments)
    if args.quick:
        args.steps, args.sessions, args.seconds, args.warmup_s = 20, [4, 16], 1.0, 0.3
        args.model_steps = 1
    report = Report(NAME, "daemon overhead", reproduce_command(MODULE, arguments), args.quick)
    report.header()
    results = asyncio.run(measure(args, report))
    add_figures(args, report, results)
    report.data["latency_series_ms"] = {
        label: series(1000 * s for s in values) for label, values in results["latency"].items()
    }
    if "model" in results:
        report.data["latency_series_ms"][results["model_label"]] = series(
            1000 * s for s in results["model"]
        )
    report.finish(plot(report, results), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
