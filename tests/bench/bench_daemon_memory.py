"""Daemon memory: RSS per idle session and per session with a full history window.

    uv run python -m tests.bench.bench_daemon_memory            # full run, ~3 min
    uv run python -m tests.bench.bench_daemon_memory --quick    # smoke run

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
    for fmt, levels in results.items():
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


def plot(report: Report, results: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
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
    left.set_title("daemon RSS")
    right.set_xlabel("sessions")
    right.set_ylabel("RSS per session (KiB)")
    right.legend(fontsize=7)
    right.set_title("per session")
    figure.suptitle(
        f"daemon memory, 3-frame window, 1920x1080 frames — {report.command}", fontsize=9
    )
    figure.tight_layout()
    return figure


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(arguments)
    if args.quick:
        args.sessions, args.distinct_frames = [4, 12], 3
    report = Report(NAME, "daemon memory", reproduce_command(MODULE, arguments), args.quick)
    report.header()
    results = asyncio.run(measure(args))
    add_figures(report, results)
    report.data["levels"] = results
    report.data["window_frames"] = WINDOW
    report.finish(plot(report, results), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
