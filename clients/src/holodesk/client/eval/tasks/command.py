"""`holodesk eval tasks SUITE --server HOST:PORT --out DIR`: run a task suite in
OSWorld's format and score every task by its evaluator (docs/eval/tasks.md).

Exit status (as holodesk run's, exit_codes.py): 0 every run was scored, whatever
its score; 1 some runs were left out because their set-up failed (the output says
which); 2 bad usage or a suite with problems under --on-problem stop; 3 interrupted;
5 the daemon could not be reached or asked, or dropped sessions (those runs are left
out and run again on --resume); 6 with --ray, the environments did not start on
the cluster. --ray ADDRESS runs the suite on a RayPool (run_suite_on_pool, docs/ray.md)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
from collections.abc import Coroutine
from dataclasses import replace
from importlib.metadata import version
from pathlib import Path
from typing import Any

from holodesk.client.argtypes import positive_int
from holodesk.client.channel import ChannelError, open_channel
from holodesk.client.cli import Command, command_error
from holodesk.client.connection_args import (
    add_connection_arguments,
    add_server_argument,
    read_channel_settings,
)
from holodesk.client.exit_codes import ExitCode
from holodesk.client.rollouts.ray_args import RAY_ONLY, add_ray_arguments

NAME = "eval tasks"
BUNDLED = Path(__file__).parent / "bundled"
MANIFEST = "manifest.json"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "suite",
        metavar="SUITE",
        help="a folder in OSWorld's layout (test_all.json + examples/<domain>/<id>.json), "
        "one task file, or `bundled`",
    )
    add_server_argument(parser)
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="results folder")
    parser.add_argument(
        "--envs",
        type=positive_int,
        default=1,
        metavar="N",
        help="environments at once (default: 1)",
    )
    parser.add_argument(
        "-k",
        type=positive_int,
        default=1,
        metavar="K",
        help="runs per task, for pass@k (default: 1)",
    )
    parser.add_argument(
        "--max-steps",
        type=positive_int,
        default=15,
        metavar="S",
        help="step budget per run (default: %(default)s, as OSWorld's runs)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue the run in DIR: finished runs are kept"
    )
    parser.add_argument(
        "--domain", action="append", default=[], metavar="D", help="only this domain (repeatable)"
    )
    parser.add_argument(
        "--on-problem",
        choices=("skip", "stop"),
        default="skip",
        help="a task that cannot run (unknown step, getter, metric ...): leave it out, or "
        "stop before running anything (default: %(default)s)",
    )
    parser.add_argument(
        "--instruction-field",
        choices=("auto", "instruction", "ocr_instruction"),
        default="auto",
        help="the task text to send; auto: ocr_instruction when the daemon's policy is the "
        "OCR baseline, else instruction (default: auto)",
    )
    parser.add_argument("--index", default="test_all.json", help="the suite's index file name")
    parser.add_argument("--policy", default="", help="daemon policy (default: the daemon's)")
    parser.add_argument(
        "--model", default="", help="the results' <model> folder (default: the policy's name)"
    )
    parser.add_argument("--width", type=positive_int, default=1280, help="display width")
    parser.add_argument("--height", type=positive_int, default=800, help="display height")
    add_connection_arguments(parser.add_argument_group("connection"))
    # As holodesk rollouts': --envs environments as Ray actors (docs/ray.md).
    add_ray_arguments(parser.add_argument_group("Ray cluster"))


def run(args: argparse.Namespace) -> int:
    if args.ray is None and (args.resources or args.labels):
        return command_error(NAME, RAY_ONLY)
    try:
        return asyncio.run(_sigterm_cancels(_run(args)))
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("interrupted: finished runs are kept; --resume continues", file=sys.stderr)
        return ExitCode.CANCELLED


async def _sigterm_cancels(work: Coroutine[Any, Any, int]) -> int:
    """SIGTERM (`kill`) cancels the run as Ctrl-C does: sessions end, every environment
    is closed (its apps, X server and HOME gone) and finished runs stay."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    try:
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    except (NotImplementedError, RuntimeError):  # loops that take no signal handlers
        return await work
    try:
        return await work
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGTERM)


async def _run(args: argparse.Namespace) -> int:
    from holodesk.client.eval.tasks.policy import (
        PolicyUnknownError,
        instruction_field,
        session_policy,
    )
    from holodesk.client.eval.tasks.reader import read_suite
    from holodesk.client.eval.tasks.report import write_report
    from holodesk.client.eval.tasks.results import Layout
    from holodesk.client.eval.tasks.runner import SCORED, default_environments, run_suite
    from holodesk.client.eval.tasks.summary import summarize, table, write_summary
    from holodesk.client.rollouts import ROLLOUT_OPTIONS

    source = BUNDLED if args.suite == "bundled" else Path(args.suite)
    if not source.exists():
        return command_error(NAME, f"{args.suite}: no such suite")
    try:
        settings = read_channel_settings(args)
        channel = open_channel(args.server, settings)
    except (ChannelError, OSError, ValueError) as error:
        return command_error(NAME, error)
    try:
        try:
            policy = await session_policy(channel, args.policy)
        except PolicyUnknownError as error:
            if args.instruction_field == "auto":
                return command_error(NAME, error, ExitCode.DAEMON_ERROR)
            policy = args.policy
        field = (
            instruction_field(policy)
            if args.instruction_field == "auto"
            else args.instruction_field
        )
        try:
            suite = read_suite(
                source, index=args.index, domains=args.domain, instruction_field=field
            )
        except (OSError, ValueError) as error:
            return command_error(NAME, error)
        for problem in suite.problems:
            print(f"problem: {problem}", file=sys.stderr)
        if suite.problems and args.on_problem == "stop":
            return command_error(
                NAME, f"{len(suite.problems)} task(s) cannot run (above); nothing was run"
            )
        if not suite.tasks:
            return command_error(NAME, f"{source}: no task to run")
        layout = Layout(args.out, args.model or policy or "default", k=args.k)
        manifest = {
            "suite": str(source.resolve()),
            "k": args.k,
            "max_steps": args.max_steps,
            "instruction_field": field,
            "policy": policy,
            "width": args.width,
            "height": args.height,
            "holodesk": version("holodesk-client"),
        }
        refused = _check_manifest(layout.base / MANIFEST, manifest, args.resume)
        if refused:
            return command_error(NAME, refused)
        print(
            f"{len(suite.tasks)} task(s) x {args.k}, {args.envs} environment(s), "
            f"{args.max_steps} steps each, policy {policy or '(default)'} ({field}); "
            f"{len(suite.problems)} skipped",
            file=sys.stderr,
        )

        def progress(trajectory: Any) -> None:
            task = trajectory.task.metadata["osworld_task"]
            reward = trajectory.reward
            scored = (
                f"score {reward.reward:g}"
                if trajectory.outcome in SCORED and reward is not None and reward.reward is not None
                else "not scored"
            )
            print(
                f"{task.domain}/{task.id} run {trajectory.task.metadata['repeat']}: "
                f"{trajectory.outcome.value}, {scored}",
                file=sys.stderr,
            )

        options = replace(ROLLOUT_OPTIONS, channel=settings, policy=args.policy)
        started = time.monotonic()
        if args.ray is not None:
            run_log = await _run_on_ray(args, suite, layout, field, options, progress)
            if isinstance(run_log, int):
                return run_log
        else:
            run_log = await run_suite(
                channel,
                suite,
                layout,
                environments=args.envs,
                max_steps=args.max_steps,
                instruction_field=field,
                environment_factory=default_environments(args.width, args.height),
                options=options,
                on_run=progress,
            )
        wall_s = time.monotonic() - started
    finally:
        await channel.close()
    summary = summarize(layout, suite.tasks, suite.problems)
    ran = len(run_log.scored) + len(run_log.left_out)
    summary["settings"] = manifest  # the step budget, k, instruction field, policy ...
    # This invocation's throughput (a resumed run's summary covers earlier runs too).
    summary["this_invocation"] = {
        "runs": ran,
        "scored": len(run_log.scored),
        "environments": args.envs,
        "wall_seconds": round(wall_s, 3),
        "runs_per_hour": round(ran * 3600 / wall_s, 1) if ran and wall_s > 0 else None,
    }
    summary_path = write_summary(layout, summary)
    report = write_report(layout, suite.tasks, summary)
    print(table(summary))
    if ran:
        print(
            f"{ran} run(s) in {wall_s:.1f} s with {args.envs} environment(s): "
            f"{ran * 3600 / wall_s:.0f} runs/hour"
        )
    print(f"summary: {summary_path}\nreport: {report}")
    for left in run_log.left_out:
        print(
            f"not scored: {left.task.domain}/{left.task.id} run {left.repeat}: {left.why}",
            file=sys.stderr,
        )
    if any(left.daemon for left in run_log.left_out):
        return ExitCode.DAEMON_ERROR
    return ExitCode.FAILED if run_log.left_out else ExitCode.SUCCEEDED


async def _run_on_ray(
    args: argparse.Namespace,
    suite: Any,
    layout: Any,
    field: str,
    options: Any,
    progress: Any,
) -> Any:
    """The suite on --ray's cluster: --envs TaskEnvironments as actors placed by
    --resources/--labels (run_suite_on_pool); an exit code when the pool did not start."""
    from holodesk.client.rollouts.ray_pool import (
        EnvironmentSpec,
        EnvironmentStartError,
        RayPool,
        RayUnavailableError,
    )
    from holodesk.client.rollouts.ray_pool.suites import TaskEnvironments, run_suite_on_pool

    spec = EnvironmentSpec(
        TaskEnvironments(args.width, args.height),
        count=args.envs,
        name="task",
        resources=args.resources,
        label_selector=args.labels,
    )
    try:
        pool = RayPool(args.server, [spec], address=args.ray)
    except RayUnavailableError as error:
        return command_error(NAME, error)
    try:
        await pool.start()
    except (EnvironmentStartError, OSError, RuntimeError) as error:
        await pool.close()
        return command_error(
            NAME, f"environments did not start: {error}", ExitCode.BACKEND_UNAVAILABLE
        )
    try:
        return await run_suite_on_pool(
            pool,
            suite,
            layout,
            max_steps=args.max_steps,
            instruction_field=field,
            options=options,
            on_run=progress,
        )
    finally:
        await pool.close()


def _check_manifest(path: Path, manifest: dict[str, Any], resume: bool) -> str:
    """ "" when the run may go on; else why not (a different run's results there)."""
    if path.is_file():
        if not resume:
            return f"{path.parent} already holds results; pass --resume to continue that run"
        try:
            before = json.loads(path.read_text())
        except ValueError:
            before = {}
        differs = [k for k in manifest if k != "holodesk" and before.get(k) != manifest[k]]
        if differs:
            return (
                f"{path} was written by a different run ({', '.join(differs)} differ); "
                "resume with the same settings or choose another --out"
            )
        return ""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    return ""


COMMAND = Command(
    name="tasks",
    help="run a task suite in OSWorld's format and score each task by its evaluator",
    description="Run every task of a suite in OSWorld's format (or `bundled`) in fresh "
    "environments (a new Xvfb display and HOME per run), k times each, and score it with "
    "its evaluator; results in OSWorld's layout, resumable, with a summary and a report.",
    configure=configure,
    run=run,
)
