"""`holodesk eval grounding BENCHMARK PATH --server HOST:PORT --out RUN_DIR`.

    holodesk eval grounding screenspot-v2 ~/data/ScreenSpot-v2 --server gpu:50051 \\
        --out runs/ssv2 -k 32
    holodesk eval grounding screenspot-v2 ~/data/ScreenSpot-v2 --server gpu:50051 \\
        --out runs/ssv2 --resume

Reads the data set with its benchmark's reader (holodesk.data.grounding), asks the
daemon's Locate about every sample (runner.py), appends each answer to
RUN_DIR/predictions.jsonl as it comes (predictions.py), records what ran in
RUN_DIR/manifest.json (manifest.py), then scores by the benchmark's own rule and
writes RUN_DIR/summary.json, prints the table (outputs.py) and writes
RUN_DIR/report.html (report.py). A stopped run keeps its answers; `--resume` asks
only about the samples without one, after checking that the data and the policy are
those of the run it finishes.

Exit status: 0 when every sample of the run was scored; 1 when some failed (their
images, or the daemon refused them: --resume tries them again) or a data-set problem
stopped the run (--on-problem stop); 2 for bad usage or a run that cannot be resumed;
5 when the daemon dropped or refused every call (what was answered stays).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc.aio

from holodesk.client.argtypes import positive_float, positive_int
from holodesk.client.channel import ChannelError, ChannelSettings, check_settings, open_channel
from holodesk.client.cli import Command, command_error
from holodesk.client.connection_args import (
    NO_SERVER,
    add_connection_arguments,
    add_server_argument,
    read_channel_settings,
)
from holodesk.client.credentials import CredentialsError
from holodesk.client.eval.grounding import manifest as manifests
from holodesk.client.eval.grounding import outputs, predictions, report
from holodesk.client.eval.grounding.predictions import Failure, Prediction
from holodesk.client.eval.grounding.runner import Counts, RunStoppedError, run_samples
from holodesk.client.exit_codes import ExitCode
from holodesk.client.locations import PolicyPinning
from holodesk.client.progress import BatchProgress
from holodesk.client.shown import shown
from holodesk.data.grounding import Dataset, GroundingSample, LayoutError
from holodesk.data.grounding.benchmarks import BENCHMARKS, Benchmark
from holodesk.proto.v1 import control_pb2, control_pb2_grpc

NAME = "eval grounding"
# Problems printed before the run; all of them are in summary.json.
SHOWN_PROBLEMS = 20


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "benchmark",
        metavar="BENCHMARK",
        help=f"one of {', '.join(BENCHMARKS)}",
    )
    parser.add_argument(
        "path", type=Path, metavar="PATH", help="the data set, in its published layout"
    )
    add_server_argument(parser)
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="RUN_DIR",
        help="the run's folder: manifest.json, predictions.jsonl, summary.json, report.html",
    )
    parser.add_argument(
        "-k",
        "--concurrency",
        type=positive_int,
        default=8,
        metavar="K",
        help="Locate calls in flight (default: %(default)s)",
    )
    parser.add_argument(
        "--limit", type=positive_int, metavar="N", help="only the first N samples of the data set"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="finish the run in RUN_DIR: ask only about samples without an answer, after "
        "checking that the data set and the daemon's policy are the run's",
    )
    parser.add_argument(
        "--on-problem",
        choices=("skip", "stop"),
        default="skip",
        help="a sample that does not match its layout, or whose image cannot be sent: "
        "leave it out (counted and listed in the summary) or stop (default: %(default)s)",
    )
    parser.add_argument("--policy", default="", help="daemon policy (default: the daemon's)")
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=300.0,
        metavar="SECONDS",
        help="per Locate call (default: %(default)s)",
    )
    add_connection_arguments(parser.add_argument_group("connection"))


class _RefusedError(Exception):
    def __init__(self, message: str, code: ExitCode = ExitCode.USAGE) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class _Plan:
    benchmark: Benchmark
    dataset: Dataset
    # The run's samples (the data set's first --limit).
    scope: tuple[GroundingSample, ...]
    # The manifest of the run being resumed (None: a new run).
    previous: dict[str, Any] | None
    answered: frozenset[str]


def run(args: argparse.Namespace) -> int:
    if not args.server:
        return command_error(NAME, NO_SERVER)
    benchmark = BENCHMARKS.get(args.benchmark)
    if benchmark is None:
        return command_error(
            NAME, f"unknown benchmark {args.benchmark!r}; known: {', '.join(BENCHMARKS)}"
        )
    try:
        settings = read_channel_settings(args)
        check_settings(args.server, settings)
        plan = _prepare(args, benchmark)
    except (CredentialsError, ChannelError) as error:
        return command_error(NAME, error)
    except _RefusedError as error:
        return command_error(NAME, error, error.code)
    except KeyboardInterrupt:
        return command_error(NAME, "interrupted", ExitCode.CANCELLED)
    run_dir: Path = args.out
    pending = [s for s in plan.scope if s.id not in plan.answered]
    print(
        f"{benchmark.name}: {len(plan.scope)} sample(s) in this run, "
        f"{len(plan.scope) - len(pending)} already answered, {len(pending)} to ask",
        file=sys.stderr,
    )
    stopped: RunStoppedError | None = None
    try:
        asyncio.run(_run(args, plan, pending, settings))
    except RunStoppedError as error:
        stopped = error
    except KeyboardInterrupt:
        stopped = RunStoppedError("interrupted", ExitCode.CANCELLED)
    except OSError as error:  # the run folder: full, gone, not writable
        stopped = RunStoppedError(f"cannot write to {run_dir}: {error}", ExitCode.FAILED)
    if not (run_dir / manifests.FILE_NAME).exists():
        # Stopped before any answer or failure: nothing to score, no run to resume.
        message = stopped or "nothing was asked"
        return command_error(NAME, message, stopped.code if stopped else ExitCode.FAILED)
    try:
        scored = _finish(run_dir, plan)
    except OSError as error:
        return command_error(
            NAME, f"cannot write the summary in {run_dir}: {error}", ExitCode.FAILED
        )
    print(scored.table())
    print(
        f"\nwrote {run_dir / outputs.FILE_NAME} and {run_dir / report.FILE_NAME}",
        file=sys.stderr,
    )
    if stopped is not None:
        print(
            shown(
                f"holodesk {NAME}: stopped: {stopped}\n"
                f"  the answers so far are in {run_dir / predictions.FILE_NAME}; run the same "
                "command with --resume to finish"
            ),
            file=sys.stderr,
        )
        return stopped.code
    return ExitCode.FAILED if scored.failures else ExitCode.SUCCEEDED


def _prepare(args: argparse.Namespace, benchmark: Benchmark) -> _Plan:
    run_dir: Path = args.out
    manifest_path = run_dir / manifests.FILE_NAME
    predictions_path = run_dir / predictions.FILE_NAME
    has_answers = predictions_path.exists() and predictions_path.stat().st_size > 0
    if run_dir.exists() and not run_dir.is_dir():
        raise _RefusedError(f"--out {run_dir} is not a folder")
    if (manifest_path.exists() or has_answers) and not args.resume:
        raise _RefusedError(
            f"{run_dir} already holds a run; pass --resume to finish it, or choose another --out"
        )
    if has_answers and not manifest_path.exists():
        raise _RefusedError(
            f"{predictions_path} has answers but {manifest_path} is missing: cannot tell "
            "what they answered, so they cannot be resumed"
        )
    dataset = _read(benchmark, args.path, args.on_problem)
    scope = dataset.samples[: args.limit] if args.limit else dataset.samples
    previous = None
    if args.resume and manifest_path.exists():
        try:
            previous = manifests.read_manifest(run_dir)
        except manifests.ManifestError as error:
            raise _RefusedError(str(error)) from error
        candidate = _manifest(args, benchmark, dataset, scope, None, None)
        fields = [f for f in manifests.RESUME_FIELDS if f != "policy"]
        found = manifests.differences(previous, candidate, fields)
        if found:
            raise _RefusedError(
                f"cannot resume {run_dir}: this command differs from its run in\n"
                + manifests.describe(found, "run", "now")
            )
    answered: frozenset[str] = frozenset()
    if previous is not None:
        loaded = predictions.load(predictions_path)
        if loaded.dropped:
            print(
                f"{predictions_path}: dropped {loaded.dropped} line(s) cut short by a crash",
                file=sys.stderr,
            )
        answered = frozenset(loaded.predictions)
    return _Plan(benchmark, dataset, tuple(scope), previous, answered)


def _read(benchmark: Benchmark, path: Path, on_problem: str) -> Dataset:
    try:
        dataset = benchmark.read(path)
    except LayoutError as error:
        raise _RefusedError(f"{benchmark.name} data set {path}: {error}") from error
    except ImportError as error:  # pyarrow, for the Parquet benchmarks
        raise _RefusedError(str(error)) from error
    problems = dataset.problems
    for problem in problems[:SHOWN_PROBLEMS]:
        print(shown(f"  problem: {problem}"), file=sys.stderr)
    if len(problems) > SHOWN_PROBLEMS:
        print(f"  ... and {len(problems) - SHOWN_PROBLEMS} more problem(s)", file=sys.stderr)
    if problems and on_problem == "stop":
        raise _RefusedError(
            f"{len(problems)} problem(s) in the data set {path} (--on-problem stop)",
            ExitCode.FAILED,
        )
    if problems:
        print(f"  {len(problems)} problem(s) left out (--on-problem skip)", file=sys.stderr)
    twice = sorted(i for i, n in Counter(s.id for s in dataset.samples).items() if n > 1)
    if twice:
        raise _RefusedError(f"{path}: sample id(s) used twice: {', '.join(twice[:10])}")
    if not dataset.samples:
        raise _RefusedError(f"{path}: no sample could be read")
    return dataset


def _manifest(
    args: argparse.Namespace,
    benchmark: Benchmark,
    dataset: Dataset,
    scope: tuple[GroundingSample, ...] | list[GroundingSample],
    pinning: PolicyPinning | None,
    daemon_version: str | None,
) -> dict[str, Any]:
    return manifests.new_manifest(
        benchmark=benchmark.name,
        dataset_path=args.path,
        content_hash=dataset.content_hash,
        samples=len(dataset.samples),
        not_read=dataset.not_read,
        limit=args.limit,
        scope=len(scope),
        pinning=pinning,
        server=args.server,
        daemon_version=daemon_version,
    )


async def _run(
    args: argparse.Namespace,
    plan: _Plan,
    pending: list[GroundingSample],
    settings: ChannelSettings,
) -> Counts:
    run_dir: Path = args.out
    channel = open_channel(args.server, settings)
    try:
        if plan.previous is None:
            daemon_version = await _daemon_version(channel)
            state = _manifest(args, plan.benchmark, plan.dataset, plan.scope, None, daemon_version)
        else:
            state = plan.previous

        def write_manifest() -> None:
            """Before the first line of predictions.jsonl: every line has a manifest."""
            run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            manifests.write_manifest(run_dir, state)

        def on_pinning(pinning: PolicyPinning | None) -> None:
            nonlocal state
            policy = manifests.policy_json(pinning)
            if state.get("policy") is None and not plan.answered:
                # The first answer of the run says what answers.
                state = {**state, "policy": policy}
            else:
                found = manifests.differences(state, {"policy": policy}, ["policy"])
                if found:
                    raise RunStoppedError(
                        "refusing to resume: the daemon's policy is not the run's:\n"
                        + manifests.describe(found, "run", "daemon now"),
                        ExitCode.USAGE,
                    )
            if plan.previous is not None:
                state = manifests.resumed(state)
            write_manifest()

        with BatchProgress(f"{plan.benchmark.name}", total=len(plan.scope)) as bar:
            bar.advance(len(plan.scope) - len(pending))

            def on_sample(sample: GroundingSample, entry: Prediction | Failure) -> None:
                if isinstance(entry, Failure):
                    bar.note(shown(f"  {sample.id}: {entry.error}"))
                bar.advance()

            if not pending:
                return Counts()
            appender = predictions.Appender(run_dir / predictions.FILE_NAME, write_manifest)
            try:
                return await run_samples(
                    channel,
                    pending,
                    appender,
                    on_pinning=on_pinning,
                    on_sample=on_sample,
                    policy=args.policy,
                    concurrency=args.concurrency,
                    timeout_s=args.timeout,
                    stop_on_problem=args.on_problem == "stop",
                )
            finally:
                appender.close()
    finally:
        await channel.close()


async def _daemon_version(channel: grpc.aio.Channel) -> str | None:
    """The daemon's version where the caller may ask (GetServerInfo needs an admin)."""
    stub = control_pb2_grpc.ControlServiceStub(channel)
    try:
        info = await stub.GetServerInfo(control_pb2.GetServerInfoRequest(), timeout=10.0)
    except grpc.aio.AioRpcError:
        return None
    return info.version or None


def _finish(run_dir: Path, plan: _Plan) -> outputs.Scored:
    """Score every answer in the file (this invocation's and earlier ones'), write the
    summary and the report."""
    final = predictions.read(run_dir / predictions.FILE_NAME)
    scored = outputs.score_run(
        plan.benchmark, plan.scope, final.predictions, final.failures, plan.dataset.problems
    )
    outputs.write_summary(run_dir, scored)
    manifest = manifests.read_manifest(run_dir)
    policy = manifest.get("policy") or {}
    who = policy.get("model") or policy.get("policy") or "the daemon's policy"
    title = f"{plan.benchmark.name} · {who} · {run_dir.name}"
    report.write_report(run_dir, title, plan.scope, final.predictions, scored)
    return scored


COMMAND = Command(
    name="grounding",
    help="run a grounding benchmark through Locate and score it by its own rule",
    description="Run a grounding benchmark (its data set in its published layout) through "
    "the daemon's Locate, K calls in flight, and score it by the benchmark's own rule: "
    "RUN_DIR gets manifest.json (what ran), predictions.jsonl (appended as answers come; "
    "--resume finishes a stopped run), summary.json (the official breakdown with 95% "
    "intervals, the unparsed rate, what was left out and why) and report.html.",
    configure=configure,
    run=run,
)
