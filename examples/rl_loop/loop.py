"""An online RL loop against a running holodesk daemon: roll out, export, train, push
the new weights while sessions run, roll out again on them.

    one iteration = rollouts(version v)
                  -> holodesk export --format trainer (their recordings)
                  -> trainer(rows) -> a checkpoint folder
                  -> rollouts that start on v, and TrainerService.UpdateWeights(checkpoint)
                     once one of their sessions has made a step: they finish on v+1
                  -> rollouts(v+1): every step stamped v+1

Adapt it by swapping the seams: `Trainer` (anything that turns the exported rows
into a checkpoint folder of the serving architecture: grpo.TrlGrpoTrainer here,
your trainer there), the environments and reward (targets.py), and where the
daemon records (the export reads the recordings from the daemon's --record-dir, so
the trainer needs that folder: a shared volume, or copy the rollouts' recordings).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import grpc.aio

from holodesk.client.generation import Sampling
from holodesk.client.outcome import StepRecord
from holodesk.client.rollouts import (
    ROLLOUT_OPTIONS,
    Environment,
    RewardFunction,
    RolloutTask,
    Trajectory,
    run_rollouts,
)
from holodesk.client.rollouts.staleness import RolloutStats
from holodesk.data.export import ExportFilter, export
from holodesk.proto.v1 import trainer_pb2, trainer_pb2_grpc

# What a trainer needs of every step: the sampled tokens' logprobs, the prompt as
# token ids; temperature 1: GRPO learns from the policy's own distribution.
TRAINER_SAMPLING = Sampling(temperature=1.0, logprobs=True, prompt_token_ids=True)

UPDATE_MODES = {
    "keep": trainer_pb2.UPDATE_MODE_KEEP,
    "wait": trainer_pb2.UPDATE_MODE_WAIT,
    "abort": trainer_pb2.UPDATE_MODE_ABORT,
}


class Trainer(Protocol):
    """Turns the trainer export of a round of rollouts into a checkpoint folder that
    the daemon's engine can load (same architecture, its key names)."""

    def __call__(self, rows: Path, version: int) -> Path: ...


@dataclass(frozen=True)
class RolloutPlan:
    tasks: Sequence[str | RolloutTask]
    environments: Sequence[Environment]
    reward: RewardFunction
    # Rollouts per task: the GRPO group.
    n: int = 2
    max_steps: int = 2
    policy: str = ""
    sampling: Sampling = TRAINER_SAMPLING


@dataclass
class Iteration:
    """What one iteration did, for the caller to log or check."""

    before: list[Trajectory] = field(default_factory=list)
    rows: Path | None = None
    checkpoint: Path | None = None
    update: trainer_pb2.UpdateWeightsResponse | None = None
    # Rollouts under way when the update landed.
    during: list[Trajectory] = field(default_factory=list)
    after: list[Trajectory] = field(default_factory=list)
    stats: RolloutStats = field(default_factory=RolloutStats)
    seconds: dict[str, float] = field(default_factory=dict)


async def rollouts(
    channel: grpc.aio.Channel,
    plan: RolloutPlan,
    stats: RolloutStats,
    on_step: Callable[[StepRecord], None] | None = None,
) -> list[Trajectory]:
    """One round: every task `plan.n` times. Trajectories spanning versions are kept
    and flagged (the trainer decides), and counted in `stats`."""
    options = replace(ROLLOUT_OPTIONS, on_step=on_step)
    return await run_rollouts(
        channel,
        plan.tasks,
        plan.environments,
        n=plan.n,
        sampling=plan.sampling,
        reward=plan.reward,
        policy=plan.policy,
        max_steps=plan.max_steps,
        options=options,
        max_version_span=0,
        stale="flag",
        stats=stats,
    )


def export_rows(record_dir: Path, trajectories: Sequence[Trajectory], out: Path) -> Path:
    """`holodesk export --format trainer` of these trajectories' recordings."""
    unstarted = [f"{t.outcome.value}: {t.reason}" for t in trajectories if not t.session_id]
    if unstarted:
        raise RuntimeError(f"rollouts that started no session: {unstarted}")
    missing = [t.session_id for t in trajectories if not t.recording_id]
    if missing:
        raise RuntimeError(f"sessions {missing} were not recorded: start the daemon with --record")
    paths = [record_dir / t.recording_id for t in trajectories]
    absent = [p for p in paths if not p.is_dir()]
    if absent:
        raise RuntimeError(f"recordings not found under {record_dir}: {absent}")
    summary = export(paths, out, "trainer", ExportFilter(), overwrite=True)
    return summary.dataset


async def push(
    channel: grpc.aio.Channel,
    checkpoint: Path,
    *,
    label: str,
    mode: str = "keep",
    policy: str = "",
    timeout_s: float = 300.0,
) -> trainer_pb2.UpdateWeightsResponse:
    """TrainerService.UpdateWeights: the daemon loads `checkpoint` (a folder on its
    host) without ending a session; the answer names the new version and the
    checksum the engine computed from the weights it now holds."""
    stub = trainer_pb2_grpc.TrainerServiceStub(channel)
    request = trainer_pb2.UpdateWeightsRequest(
        policy=policy, checkpoint_dir=str(checkpoint), mode=UPDATE_MODES[mode], label=label
    )
    response: trainer_pb2.UpdateWeightsResponse = await stub.UpdateWeights(
        request, timeout=timeout_s
    )
    return response


async def serving_version(channel: grpc.aio.Channel, policy: str = "") -> int:
    stub = trainer_pb2_grpc.TrainerServiceStub(channel)
    answer = await stub.GetPolicyVersion(trainer_pb2.GetPolicyVersionRequest(policy=policy))
    return int(answer.version.number)


async def iterate(
    channel: grpc.aio.Channel,
    plan: RolloutPlan,
    trainer: Trainer,
    *,
    record_dir: Path,
    work_dir: Path,
    mode: str = "keep",
) -> Iteration:
    """One iteration (see the module docstring); `channel` carries a token of the
    `trainer` role (it runs the rollouts' sessions too)."""
    report = Iteration()
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        report.seconds[name] = now - clock
        clock = now

    version = await serving_version(channel, plan.policy)
    report.before = await rollouts(channel, plan, report.stats)
    lap("rollouts")
    report.rows = export_rows(record_dir, report.before, work_dir / f"rows-v{version}")
    lap("export")
    report.checkpoint = await asyncio.to_thread(trainer, report.rows, version + 1)
    lap("train")

    stepped = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_step(_: StepRecord) -> None:
        loop.call_soon_threadsafe(stepped.set)

    during = asyncio.create_task(rollouts(channel, plan, report.stats, on_step))
    first_step = asyncio.create_task(stepped.wait())
    try:
        # Push while sessions run: after their first step, before they end.
        await asyncio.wait([during, first_step], return_when=asyncio.FIRST_COMPLETED)
        if during.done():
            raise RuntimeError("the rollouts ended before any of their sessions made a step")
        report.update = await push(
            channel, report.checkpoint, label=f"grpo-{version + 1}", mode=mode, policy=plan.policy
        )
    finally:
        first_step.cancel()
        report.during = await during
    lap("push+rollouts")
    report.after = await rollouts(channel, plan, report.stats)
    lap("rollouts-after")
    return report
