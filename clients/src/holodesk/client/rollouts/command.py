"""`holodesk rollouts TASKS.jsonl`: roll out a task file across many environments,
on a Ray cluster (--ray ADDRESS: environments as actors on the nodes that host
desktops, docs/ray.md) or in this process, writing each rollout as a JSON line.

    holodesk rollouts tasks.jsonl --app "python -m myapp" --envs 8 -n 4 \\
        --ray head:6379 --resources '{"desktop": 1}' --retries 1 --out runs.jsonl

Environments: --app (a private Xvfb running a command), --url (a Chromium page),
--vnc (desktops VNC servers serve, one environment each), --sandbox (a fresh
sandbox container per rollout), or --environment (the caller's own factory).

A progress bar (stderr) counts rollouts done, lost and retried; --out gets one
line per rollout as it ends (a trajectory's summary, or a lost attempt). The exit
status is `holodesk run`'s for the first rollout (in task order) that did not
succeed, 0 when all did; a rollout lost for good counts as 6 (its environment
went away), environments that cannot start are 6 too, bad arguments 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from holodesk.client.argtypes import non_negative_int, positive_float, positive_int
from holodesk.client.channel import ChannelError, ChannelSettings
from holodesk.client.cli import Command
from holodesk.client.connection_args import (
    add_connection_arguments,
    add_server_argument,
    read_channel_settings,
)
from holodesk.client.credentials import CredentialsError
from holodesk.client.events import Outcome
from holodesk.client.exit_codes import ExitCode, for_outcome
from holodesk.client.progress import BatchProgress
from holodesk.client.rollouts.environments.sandbox import DEFAULT_IMAGE
from holodesk.client.rollouts.factories import (
    LoadError,
    Sandbox,
    VncDesktop,
    WebPage,
    XvfbCommand,
    load,
)
from holodesk.client.rollouts.ray_args import add_ray_arguments
from holodesk.client.rollouts.task_file import TaskFileError, read_tasks
from holodesk.client.rollouts.trajectory import RolloutTask, Trajectory
from holodesk.client.shown import shown
from holodesk.platform.vnc.address import parse_server
from holodesk.platform.vnc.backend import PASSWORD_ENV


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tasks", type=Path, metavar="TASKS.jsonl", help="one task per line")
    add_server_argument(parser, "the daemon's address, as every environment reaches it")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--app", metavar="COMMAND", help="each environment: a private Xvfb running COMMAND"
    )
    where.add_argument("--url", help="each environment: a headless Chromium page at URL")
    where.add_argument(
        "--vnc",
        action="append",
        metavar="ADDRESS",
        help="an environment on the desktop this VNC server serves (HOST, HOST:DISPLAY, "
        f"HOST::PORT; password: ${PASSWORD_ENV}); repeat for more",
    )
    where.add_argument(
        "--sandbox",
        nargs="?",
        const=DEFAULT_IMAGE,
        metavar="IMAGE",
        help=f"each environment: a fresh sandbox container per rollout (default image "
        f"{DEFAULT_IMAGE}; docker or podman; docs/sandbox.md)",
    )
    where.add_argument(
        "--environment",
        metavar="MODULE:NAME",
        help="each environment: made by this factory (name -> Environment); on a cluster "
        "every node must import MODULE",
    )
    parser.add_argument(
        "--reward", metavar="MODULE:NAME", help="reward function, run next to each environment"
    )
    parser.add_argument(
        "--envs", type=positive_int, metavar="N", help="environments (default 1; --vnc: one each)"
    )
    parser.add_argument("-n", type=positive_int, default=1, help="rollouts per task (default 1)")
    parser.add_argument(
        "--size", default="1280x800", metavar="WxH", help="--app/--url/--sandbox screen"
    )
    parser.add_argument(
        "--vnc-reset",
        metavar="COMMAND",
        help="--vnc: run before every rollout (HOLODESK_VNC_SERVER set): put the desktop back",
    )
    parser.add_argument(
        "--sandbox-apps", metavar="'APP; APP'", help="--sandbox: apps on its desktop"
    )
    parser.add_argument(
        "--container-runtime",
        metavar="PATH",
        help="--sandbox: docker or podman (default: $CONTAINER_RUNTIME, docker, podman)",
    )
    parser.add_argument("--max-steps", type=non_negative_int, default=0, help="per session")
    parser.add_argument("--policy", default="", help="daemon policy (default: the daemon's)")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write rollouts here (JSONL)")
    parser.add_argument(
        "--record",
        type=Path,
        metavar="DIR",
        help="also record every session here, on the machine its environment runs on",
    )
    # TLS, mTLS and the bearer token, as holodesk run's: every environment opens its
    # sessions with them (the PEM files at the same paths on every node; the token read
    # here travels to the actors with the pool's settings).
    add_connection_arguments(parser.add_argument_group("connection"))
    ray = parser.add_argument_group("Ray cluster")
    add_ray_arguments(ray)
    ray.add_argument(
        "--retries", type=non_negative_int, default=0, help="tries again for a lost rollout"
    )
    ray.add_argument(
        "--time-limit",
        type=positive_float,
        metavar="SECONDS",
        help="kill and replace an environment whose rollout runs longer",
    )


@dataclass
class _Tally:
    """Each rollout's final exit code, by its place in task order."""

    codes: dict[tuple[int, int], ExitCode] = field(default_factory=dict)

    def exit_code(self) -> ExitCode:
        for key in sorted(self.codes):
            if self.codes[key] is not ExitCode.SUCCEEDED:
                return self.codes[key]
        return ExitCode.SUCCEEDED


def run(args: argparse.Namespace) -> int:
    try:
        tasks = read_tasks(args.tasks)
        environments = _environments(args)
        reward = load(args.reward, "--reward") if args.reward else None
        channel = read_channel_settings(args)
    except (TaskFileError, LoadError, ValueError, ChannelError, CredentialsError) as error:
        print(f"holodesk rollouts: {shown(str(error))}", file=sys.stderr)
        return ExitCode.USAGE
    if args.ray is None and (args.resources or args.labels or args.time_limit):
        print(
            "holodesk rollouts: --resources, --labels and --time-limit place and kill Ray "
            "actors: give --ray ADDRESS",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    try:
        return asyncio.run(_rollouts(args, tasks, environments, reward, channel))
    except KeyboardInterrupt:
        return ExitCode.CANCELLED


@dataclass(frozen=True)
class _Environments:
    """`count` environments named NAME-1... made by `factory`."""

    name: str
    factory: Any
    count: int


def _environments(args: argparse.Namespace) -> list[_Environments]:
    # Each kind's own flags, and the kind they go with.
    for flag, value, kind, chosen in (
        ("--vnc-reset", args.vnc_reset, "--vnc", args.vnc),
        ("--sandbox-apps", args.sandbox_apps, "--sandbox", args.sandbox),
        ("--container-runtime", args.container_runtime, "--sandbox", args.sandbox),
    ):
        if value is not None and chosen is None:
            raise ValueError(f"{flag} goes with {kind}")
    if args.vnc:
        return _vnc_desktops(args)
    count = args.envs or 1
    width, _, height = args.size.partition("x")
    if not (width.isdigit() and height.isdigit()):
        raise ValueError(f"--size is WIDTHxHEIGHT, got {args.size!r}")
    if args.app is not None:
        argv = tuple(shlex.split(args.app))
        if not argv:
            raise ValueError("--app needs a command")
        return [_Environments("env", XvfbCommand(argv, int(width), int(height)), count)]
    if args.url is not None:
        return [_Environments("env", WebPage(args.url, int(width), int(height)), count)]
    if args.sandbox is not None:
        sandbox = Sandbox(
            args.sandbox, args.sandbox_apps, int(width), int(height), args.container_runtime
        )
        return [_Environments("sandbox", sandbox, count)]
    return [_Environments("env", load(args.environment, "--environment"), count)]


def _vnc_desktops(args: argparse.Namespace) -> list[_Environments]:
    """One environment per --vnc address: a desktop cannot hold two sessions."""
    if args.envs is not None and args.envs != len(args.vnc):
        raise ValueError(
            f"--vnc names {len(args.vnc)} desktop(s), one environment each: "
            f"drop --envs or give --envs {len(args.vnc)}"
        )
    if len(set(args.vnc)) != len(args.vnc):
        raise ValueError("a --vnc address is given twice: a desktop holds one session")
    reset = tuple(shlex.split(args.vnc_reset)) if args.vnc_reset else ()
    password = os.environ.get(PASSWORD_ENV) or None
    desktops = []
    for address in args.vnc:
        try:
            host, port = parse_server(address)
        except ValueError as error:
            raise ValueError(f"--vnc {address!r}: {error}") from None
        name = "vnc-" + re.sub(r"[^a-zA-Z0-9_.-]", "-", f"{host}-{port}")
        desktops.append(_Environments(name, VncDesktop(address, password, reset), 1))
    return desktops


async def _rollouts(
    args: argparse.Namespace,
    tasks: list[RolloutTask],
    environments: list[_Environments],
    reward: Any,
    channel: ChannelSettings,
) -> int:
    from holodesk.client.rollouts.ray_pool import (
        EnvironmentSpec,
        EnvironmentStartError,
        LocalPool,
        Lost,
        RayPool,
        RayUnavailableError,
    )
    from holodesk.client.rollouts.runner import ROLLOUT_OPTIONS

    specs = [
        EnvironmentSpec(
            e.factory,
            count=e.count,
            name=e.name,
            resources=args.resources,
            label_selector=args.labels,
        )
        for e in environments
    ]
    pool: RayPool | LocalPool
    try:
        pool = (
            RayPool(args.server, specs, address=args.ray)
            if args.ray is not None
            else LocalPool(args.server, specs)
        )
        await pool.start()
    except RayUnavailableError as error:
        print(f"holodesk rollouts: {error}", file=sys.stderr)
        return ExitCode.USAGE
    except (EnvironmentStartError, OSError, RuntimeError) as error:
        print(f"holodesk rollouts: environments did not start: {error}", file=sys.stderr)
        return ExitCode.BACKEND_UNAVAILABLE
    options = replace(ROLLOUT_OPTIONS, channel=channel, record_dir=args.record)
    tally = _Tally()
    total = len(tasks) * args.n
    out: IO[str] | None = args.out.open("w", encoding="utf-8") if args.out else None
    try:
        with BatchProgress(_description(pool), total=total) as bar:
            async for item in pool.rollouts(
                tasks,
                n=args.n,
                reward=reward,
                policy=args.policy,
                max_steps=args.max_steps,
                options=options,
                retries=args.retries,
                time_limit_s=args.time_limit,
            ):
                key = (_index(tasks, item.task), item.sample)
                if isinstance(item, Lost):
                    bar.note(_lost_line(item))
                    if not item.retrying:
                        tally.codes[key] = ExitCode.BACKEND_UNAVAILABLE
                        bar.advance()
                else:
                    bar.note(_done_line(item))
                    tally.codes[key] = for_outcome(item.outcome)
                    bar.advance()
                bar.describe(_description(pool))
                if out is not None:
                    out.write(json.dumps(item_json(item)) + "\n")
                    out.flush()
    finally:
        if out is not None:
            out.close()
        await pool.close()
    counts = pool.counts
    print(
        f"{counts.done} done, {counts.lost} lost, {counts.retried} retried, "
        f"{counts.given_up} given up, "
        f"{sum(c is ExitCode.SUCCEEDED for c in tally.codes.values())}/{total} succeeded"
    )
    return tally.exit_code()


def _index(tasks: list[RolloutTask], task: RolloutTask) -> int:
    # A task back from a Ray actor is a copy: found by value.
    return tasks.index(task) if task in tasks else len(tasks)


def _description(pool: Any) -> str:
    counts = pool.counts
    return f"rollouts: {counts.done} done, {counts.lost} lost, {counts.retried} retried"


def _done_line(trajectory: Trajectory) -> str:
    reward = trajectory.reward
    scored = "" if reward is None or reward.reward is None else f"  reward {reward.reward:g}"
    return shown(
        f"done  {trajectory.task.task[:50]!r} #{trajectory.sample} in {trajectory.environment}: "
        f"{trajectory.outcome.name.lower()}{scored}  ({len(trajectory.steps)} steps, "
        f"{trajectory.seconds:.1f} s)"
        + ("" if trajectory.succeeded or not trajectory.reason else f": {trajectory.reason}"),
        multiline=False,
    )


def _lost_line(lost: Any) -> str:
    then = "retrying" if lost.retrying else "given up"
    return shown(
        f"lost  {lost.task.task[:50]!r} #{lost.sample} in {lost.environment or '-'}: "
        f"{lost.reason} ({then})",
        multiline=False,
    )


def _task_json(task: RolloutTask) -> dict[str, Any]:
    return {
        "task": task.task,
        "url": task.url,
        "max_steps": task.max_steps,
        "metadata": _plain(task.metadata),
    }


def _plain(value: Any) -> Any:
    """JSON-safe: what JSON cannot hold is written as its repr."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


def item_json(item: Any) -> dict[str, Any]:
    """One line of --out: a trajectory's summary (steps as their actions' kinds and
    results; the full record is the session's recording), or a lost attempt."""
    from holodesk.client.rollouts.ray_pool import Lost

    if isinstance(item, Lost):
        return {
            "kind": "lost",
            **_task_json(item.task),
            "sample": item.sample,
            "environment": item.environment,
            "node": item.node,
            "reason": item.reason,
            "attempt": item.attempt,
            "retrying": item.retrying,
        }
    trajectory: Trajectory = item
    reward = trajectory.reward
    return {
        "kind": "trajectory",
        **_task_json(trajectory.task),
        "sample": trajectory.sample,
        "environment": trajectory.environment,
        "outcome": trajectory.outcome.name,
        "succeeded": trajectory.outcome is Outcome.SUCCEEDED,
        "answer": trajectory.answer,
        "reason": trajectory.reason,
        "session_id": trajectory.session_id,
        "recording_id": trajectory.recording_id,
        "seconds": round(trajectory.seconds, 3),
        "reward": None if reward is None else reward.reward,
        "success": None if reward is None else reward.success,
        "reward_note": "" if reward is None else reward.note,
        "reward_recorded": trajectory.reward_recorded,
        "stale": trajectory.stale,
        "policy_versions": sorted(trajectory.policy_versions),
        "steps": [
            {
                "step": step.step,
                "actions": [type(action).__name__ for action in step.actions],
                "results": [result.status.name for result in step.results],
                "thought": step.thought,
            }
            for step in trajectory.steps
        ],
    }


COMMAND = Command(
    name="rollouts",
    help="roll out a task file across many environments, here or on a Ray cluster",
    description="Roll out every task of TASKS.jsonl (one JSON object a line: task, url, "
    "max_steps, metadata) -n times across --envs environments (private Xvfb displays, "
    "Chromium pages, VNC desktops or sandbox containers): in this process, or with "
    "--ray ADDRESS as Ray actors on the nodes that host desktops (--resources, --labels), "
    "lost rollouts retried (--retries) and hung environments replaced (--time-limit). "
    "See docs/ray.md.",
    configure=configure,
    run=run,
)
