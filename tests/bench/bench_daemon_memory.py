"""Daemon memory: RSS per idle session and per session with a full history window;
and the RSS of model-shaped sessions, against the daemon's own plumbing.

    uv run python -m tests.bench.bench_daemon_memory            # full run, ~10 min
    uv run python -m tests.bench.bench_daemon_memory --quick    # smoke run
    uv run python -m tests.bench.bench_daemon_memory --skip-plumbing --model-sessions 1000

For each encoding (realistic 1920x1080 text-dense desktops: PNG ~300 KiB, lossless
WebP ~70 KiB) and each level (100, 500, 1000 sessions), a fresh daemon process
(instant policy, a 3-frame history window like the holotron dialect's) is warmed up
with one session, then measured three times:

- baseline: RSS with 0 sessions (after the warm-up, so one-time allocations such
  as image plugins are not billed to sessions);
- idle: every session started (each on its own connection, as separate clients
  would be), no frame sent;
- full: every session has sent 3 observations, so its window holds 3 frames.

Per-session figures are (RSS - baseline) / sessions, next to their baseline: the
raw size of the frames a session holds (3 x the frame's bytes); the ratio is the
daemon's memory overhead factor over the frames themselves. Target (issue 9):
1000 full sessions under 2 GiB in all.

Model-shaped sessions (issue 14; tests/bench/model_load.py), at 1, 10, 100 and 1000
sessions (--model-sessions): each streams 1920x1080 screens as the real client
does (a full frame, then deltas: coloured anti-aliased text typed, pop-up menus, a
stamp of its own, so no two sessions hold the same screen; then unchanged
screens), to a fresh daemon with a ModelPolicy (holotron dialect, a scripted
engine that answers at once: the model images of each window are made and held)
and, as the baseline, to a fresh daemon with the instant policy fed the same
frames. Figures: peak RSS (VmHWM), RSS per session once every window is full,
errors; a daemon that dies (the OOM killer) is reported as such. Target (issue
14): 1000 model-shaped 1080p sessions under 2 GiB, no error, no OOM.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

from tests.bench.common import (
    Figure,
    Report,
    desktop_frames,
    kib,
    mib,
    parser,
    reproduce_command,
    rss_bytes,
)
from tests.bench.daemon_proc import server_process
from tests.bench.load import (
    BenchSession,
    FrameSource,
    close_channels,
    close_sessions,
    open_channels,
    open_sessions,
)
from tests.bench.model_load import (
    BASELINE,
    LABELS,
    MODEL,
    LevelResult,
    ScreenKit,
    add_model_shaped_args,
    errors_figure,
    model_shaped_levels,
)

NAME = "bench_daemon_memory"
MODULE = f"tests.bench.{NAME}"
WINDOW = 3
GIB = 2**30
TARGET_BYTES = 2 * GIB


def build_parser() -> Any:
    result = parser(MODULE, __doc__ or "")
    result.add_argument("--sessions", type=int, nargs="+", default=[100, 500, 1000])
    result.add_argument(
        "--encodings",
        nargs="+",
        default=["PNG", "WEBP"],
        choices=["PNG", "WEBP", "JPEG"],
        help="frame encodings to measure (default PNG WEBP)",
    )
    result.add_argument(
        "--channels", type=int, default=1000, help="connections at most (sessions share them)"
    )
    result.add_argument(
        "--distinct-frames", type=int, default=6, help="different screens the sessions cycle"
    )
    add_model_shaped_args(result)
    result.add_argument(
        "--steady-s",
        type=float,
        default=5.0,
        help="seconds of changed steps per level, after every window is full",
    )
    return result


async def _settled_rss(pid: int) -> int:
    """RSS once the daemon is quiet (grpc buffers of the last messages released)."""
    await asyncio.sleep(0.5)
    return rss_bytes(pid)


async def _fill(sessions: Sequence[BenchSession], errors: Counter[str], parallel: int = 32) -> None:
    gate = asyncio.Semaphore(parallel)

    async def fill(session: BenchSession) -> None:
        async with gate:
            try:
                for _ in range(WINDOW):
                    await session.step()
            except Exception as exc:  # counted and reported, never hidden
                errors[f"{type(exc).__name__}: {exc}"[:160]] += 1

    await asyncio.gather(*(fill(s) for s in sessions))


async def measure_level(source: FrameSource, sessions: int, channels: int) -> dict[str, Any]:
    errors: Counter[str] = Counter()
    with server_process("holodesk", history_frames=WINDOW, max_sessions=sessions + 16) as daemon:
        pool = open_channels(daemon.address, max(1, min(channels, sessions)))
        try:
            warm = await open_sessions(pool[:1], source, 1, errors, prefix="warm")
            await _fill(warm, errors)
            await close_sessions(warm, errors)
            empty = await _settled_rss(daemon.pid)
            opened = await open_sessions(pool, source, sessions, errors, prefix="m")
            idle = await _settled_rss(daemon.pid)
            await _fill(opened, errors)
            full = await _settled_rss(daemon.pid)
            await close_sessions(opened, errors)
        finally:
            await close_channels(pool)
    return {
        "sessions": sessions,
        "opened": len(opened),
        "rss_empty": empty,
        "rss_idle": idle,
        "rss_full": full,
        "errors": dict(errors),
    }


async def measure(args: Any) -> dict[str, Any]:
    results: dict[str, Any] = {}
    if not args.skip_plumbing:
        results["plumbing"] = await measure_plumbing(args)
    if args.model_sessions:
        kit = ScreenKit.make()
        results["model_screens"] = kit.describe()
        print(
            f"   model-shaped: 1920x1080 PNG screens of {kib(kit.base_bytes_mean):.0f} KiB, "
            "delta frames",
            flush=True,
        )
        # Set-up leaves 2 frames per window; 3 changed steps at least fill it (holotron
        # keeps up to 4), then --steady-s more of them and a few unchanged screens.
        results["model_levels"] = await model_shaped_levels(
            kit,
            args.model_sessions,
            dialect=args.model_dialect,
            changed_s=args.steady_s,
            unchanged_s=0.0,
            min_steps=WINDOW,
            channels=args.channels,
            decoded_screens_mb=args.decoded_screens_mb,
            processor_cache_items=args.processor_cache_items,
        )
    return results


async def measure_plumbing(args: Any) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for fmt in args.encodings:
        frames = desktop_frames(1920, 1080, args.distinct_frames, fmt)
        source = FrameSource(tuple(frames), 1920, 1080, fmt)
        print(f"   {fmt}: 1920x1080, {kib(source.mean_bytes):.0f} KiB per frame", flush=True)
        levels = []
        for sessions in args.sessions:
            level = await measure_level(source, sessions, args.channels)
            level["frame_bytes"] = source.mean_bytes
            levels.append(level)
            print(
                f"   {fmt} {sessions:>5} sessions: RSS {mib(level['rss_empty']):.0f} MiB empty, "
                f"{mib(level['rss_idle']):.0f} MiB idle, {mib(level['rss_full']):.0f} MiB full"
                f", errors {sum(level['errors'].values())}",
                flush=True,
            )
        results[fmt] = levels
    return results


def add_figures(report: Report, results: dict[str, Any]) -> None:
    for fmt, levels in results.get("plumbing", {}).items():
        for level in levels:
            n = level["sessions"]
            held = WINDOW * level["frame_bytes"]
            per_idle = (level["rss_idle"] - level["rss_empty"]) / n
            per_full = (level["rss_full"] - level["rss_empty"]) / n
            level["per_idle"], level["per_full"] = per_idle, per_full
            report.add(
                Figure(
                    f"{fmt} {n} sessions: RSS per idle session",
                    kib(per_idle),
                    "KiB",
                    note=f"daemon with 0 sessions: {mib(level['rss_empty']):.0f} MiB",
                )
            )
            report.add(
                Figure(
                    f"{fmt} {n} sessions: RSS per full-window session",
                    kib(per_full),
                    "KiB",
                    kib(held),
                    f"raw bytes of its {WINDOW} frames",
                )
            )
            errors = sum(level["errors"].values())
            at_1000 = n >= 1000
            report.add(
                Figure(
                    f"{fmt} {n} sessions: daemon RSS, windows full",
                    mib(level["rss_full"]),
                    "MiB",
                    mib(level["rss_empty"] + n * held),
                    "0-session RSS + raw frames held",
                    target="< 2048 MiB at 1000" if at_1000 else "",
                    met=(level["rss_full"] < TARGET_BYTES and errors == 0) if at_1000 else None,
                    note=f"{errors} errors" + (f": {level['errors']}" if errors else ""),
                )
            )

    if "model_levels" in results:
        add_model_figures(report, results["model_levels"])


def add_model_figures(report: Report, levels: dict[int, dict[str, LevelResult]]) -> None:
    """Peak RSS, RSS per full session and errors of the ModelPolicy daemon, each against
    the instant-policy daemon fed the same frames."""
    baseline_name = LABELS[BASELINE]
    for n, by_policy in levels.items():
        model, plain = by_policy[MODEL], by_policy[BASELINE]
        prefix = f"model-shaped {n} sessions"
        many = n >= 1000
        if model.rss_peak and plain.rss_peak:
            report.add(
                Figure(
                    f"{prefix}: daemon peak RSS",
                    mib(model.rss_peak),
                    "MiB",
                    mib(plain.rss_peak),
                    baseline_name,
                    target="< 2048 MiB, no error, no OOM" if many else "",
                    met=(model.rss_peak < TARGET_BYTES and model.healthy) if many else None,
                    note=f"{model.error_count} errors",
                )
            )
        full, base_full = _full_rss(model), _full_rss(plain)
        if full and base_full:
            report.add(
                Figure(
                    f"{prefix}: RSS per session, windows full",
                    mib((full - model.rss_start) / n),
                    "MiB",
                    mib((base_full - plain.rss_start) / n),
                    baseline_name,
                    note=f"daemon after a warm-up session: {mib(model.rss_start):.0f} MiB "
                    f"(baseline {mib(plain.rss_start):.0f})",
                )
            )
        report.add(errors_figure(prefix, model, plain, baseline_name, many=many))


def _full_rss(level: LevelResult) -> int:
    """RSS once every window was full: after the changed phase."""
    phase = level.phases.get("changed")
    return phase.rss_after if phase is not None and phase.steps else 0


def plot(report: Report, results: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plumbing = results.get("plumbing", {})
    model = results.get("model_levels", {})
    columns = (2 if plumbing else 0) + (1 if model else 0)
    figure, axes = plt.subplots(1, max(1, columns), figsize=(6.5 * max(1, columns), 4.8))
    panels = list(axes) if columns > 1 else [axes]
    if plumbing:
        plot_plumbing(panels[0], panels[1], plumbing)
    if model:
        plot_model(panels[-1], model)
    figure.suptitle(
        f"daemon memory, 3-frame window, 1920x1080 frames — {report.command}", fontsize=9
    )
    figure.tight_layout()
    return figure


def plot_plumbing(left: Any, right: Any, results: dict[str, Any]) -> None:
    colors = {"PNG": "tab:blue", "WEBP": "tab:green", "JPEG": "tab:orange"}
    for fmt, levels in results.items():
        counts = [lv["sessions"] for lv in levels]
        color = colors.get(fmt, "tab:gray")
        left.plot(counts, [mib(lv["rss_full"]) for lv in levels], "o-", color=color,
                  label=f"{fmt}: windows full")  # fmt: skip
        left.plot(counts, [mib(lv["rss_idle"]) for lv in levels], "s--", color=color,
                  label=f"{fmt}: idle")  # fmt: skip
        left.plot(counts, [mib(lv["rss_empty"] + lv["sessions"] * WINDOW * lv["frame_bytes"])
                           for lv in levels], ":", color=color,
                  label=f"{fmt}: 0-session RSS + raw frames")  # fmt: skip
        right.plot(counts, [kib(lv["per_full"]) for lv in levels], "o-", color=color,
                   label=f"{fmt}: per full session")  # fmt: skip
        right.plot(counts, [kib(lv["per_idle"]) for lv in levels], "s--", color=color,
                   label=f"{fmt}: per idle session")  # fmt: skip
        right.axhline(kib(WINDOW * levels[0]["frame_bytes"]), color=color, linestyle=":",
                      label=f"{fmt}: raw {WINDOW} frames")  # fmt: skip
    left.axhline(TARGET_BYTES / 2**20, color="tab:red", linestyle="--", label="target: 2 GiB")
    left.set_xlabel("sessions")
    left.set_ylabel("daemon RSS (MiB)")
    left.legend(fontsize=7)
    left.set_title("plumbing (instant policy, full frames): daemon RSS")
    right.set_xlabel("sessions")
    right.set_ylabel("RSS per session (KiB)")
    right.legend(fontsize=7)
    right.set_title("plumbing: per session")


def plot_model(axis: Any, levels: dict[int, dict[str, LevelResult]]) -> None:
    counts = sorted(levels)
    for policy, color in ((BASELINE, "tab:gray"), (MODEL, "tab:blue")):
        runs = [levels[n][policy] for n in counts]
        axis.plot(counts, [mib(r.rss_peak) for r in runs], "o-", color=color,
                  label=f"{LABELS[policy]}: peak")  # fmt: skip
        axis.plot(counts, [mib(_full_rss(r)) for r in runs], "s--", color=color,
                  label=f"{LABELS[policy]}: windows full")  # fmt: skip
        for n, run in zip(counts, runs, strict=True):
            if run.died:
                axis.annotate(f"died ({run.server_exit})", (n, mib(run.rss_peak)), color="red")
    axis.axhline(TARGET_BYTES / 2**20, color="tab:red", linestyle="--", label="target: 2 GiB")
    axis.set_xscale("log")
    axis.set_xticks(counts, [str(n) for n in counts])
    axis.set_xlabel("model-shaped sessions (1920x1080 delta frames)")
    axis.set_ylabel("daemon RSS (MiB)")
    axis.legend(fontsize=7)
    axis.set_title("model-shaped sessions: daemon RSS")


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(arguments)
    if args.quick:
        args.sessions, args.distinct_frames = [4, 12], 3
        args.model_sessions, args.steady_s = [1, 4], 0.5
    report = Report(NAME, "daemon memory", reproduce_command(MODULE, arguments), args.quick)
    report.header()
    results = asyncio.run(measure(args))
    add_figures(report, results)
    report.data["levels"] = results.get("plumbing", {})
    report.data["window_frames"] = WINDOW
    if "model_levels" in results:
        report.data["model_screens"] = results["model_screens"]
        report.data["model_levels"] = {
            str(n): {k: level.to_json() for k, level in by.items()}
            for n, by in results["model_levels"].items()
        }
    report.finish(plot(report, results), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
