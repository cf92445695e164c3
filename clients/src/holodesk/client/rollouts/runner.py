"""run_rollouts: many sessions at once, one per free environment, each a Trajectory.

Every task is rolled out `n` times (a group of samples of one task, for
GRPO-style training). Rollouts wait for a free environment; an environment runs
one session at a time and is reset before each. Sessions are the same as
`holodesk run`'s (session.run_session: frames, actions, safety, resume), on one
shared gRPC channel. After each session the reward function, if any, scores
the trajectory while the environment still shows its final state, and the
reward goes to the daemon (ReportReward) for the session's recording.

With `max_version_span`, a trajectory whose tokens came from policy versions
further apart than that (the daemon's weights changed under it:
staleness.py) is stale: `stale="flag"` keeps it with Trajectory.stale set,
`stale="drop"` leaves it out of the returned list. Either way the session ran
and is what it is: its reward is still scored and reported (its recording stays
a complete record, and success rates over recordings stay unbiased), and
on_trajectory still sees it, flagged, so a caller can log what it loses.
`stats` counts both.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

import grpc.aio

from holodesk.client.channel import open_channel
from holodesk.client.events import Outcome, Started
from holodesk.client.generation import Sampling
from holodesk.client.outcome import SessionOutcome
from holodesk.client.prompt import NoUserError
from holodesk.client.rollouts.environments import Environment
from holodesk.client.rollouts.rewards import RewardReporter
from holodesk.client.rollouts.staleness import RolloutStats, StaleAction, check_bound, is_stale
from holodesk.client.rollouts.trajectory import Reward, RolloutTask, Trajectory, TrajectoryStep
from holodesk.client.safety import SafetySettings
from holodesk.client.session import SessionOptions, run_session
from holodesk.client.whole_frames import whole_frames
from holodesk.platform.base import Backend


@dataclass(frozen=True)
class Finished:
    """What a reward function gets: the trajectory, and its environment as the session
    left it (the backend is still open: capture the screen, inspect a web page)."""

    trajectory: Trajectory
    environment: Environment
    backend: Backend


RewardValue = Reward | float | bool | None
RewardFunction = Callable[[Finished], RewardValue | Awaitable[RewardValue]]


def _no_user(question: str) -> str:
    raise NoUserError(f"nobody to ask {question!r}: this is an unattended rollout")


# Unattended sandboxes: no global stop hotkey (it would watch the real desktop's
# keyboard), no fail-safe corner (no human pointer), no rate limit, no one to ask.
ROLLOUT_OPTIONS = SessionOptions(
    ask_user=_no_user,
    safety=SafetySettings(emergency_stop=None, fail_safe=False, max_actions_per_second=0),
)


async def run_rollouts(
    server: str | grpc.aio.Channel,
    tasks: Sequence[str | RolloutTask],
    environments: Sequence[Environment],
    *,
    n: int = 1,
    sampling: Sampling | None = None,
    reward: RewardFunction | None = None,
    policy: str = "",
    max_steps: int = 0,
    keep_frames: bool = False,
    options: SessionOptions = ROLLOUT_OPTIONS,
    on_trajectory: Callable[[Trajectory], None] | None = None,
    max_version_span: int | None = None,
    stale: StaleAction = "flag",
    stats: RolloutStats | None = None,
) -> list[Trajectory]:
    """Roll out every task `n` times across `environments`; trajectories in task order
    (the n samples of a task together), less the stale ones with stale="drop".

    `server` is the daemon's address (a channel is opened with options.channel) or an
    open channel. `options` is the template for every session (policy, sampling,
    max_steps and keep_frames given here take precedence). Environments are started
    if they are not, and left running for the next call: the caller closes them.
    A failing environment makes its rollout an ERROR trajectory; a failing reward
    function propagates (and cancels the other rollouts).

    `max_version_span` bounds staleness: a trajectory whose tokens came from policy
    versions more than that far apart (Trajectory.version_span; 0: all from one
    version; None: no bound) is flagged or dropped as `stale` says (see the module's
    docstring for what a dropped one still does). `stats`, when given, is updated
    as each rollout finishes: how many finished, were dropped, flagged, mixed
    versions within a step, and the versions seen. Sampling(prompt_token_ids=True)
    keeps each step's prompt ids in its generation, for a trainer.
    """
    check_bound(max_version_span, stale)
    if n < 1:
        raise ValueError(f"n must be 1 or more, got {n}")
    if not environments:
        raise ValueError("rollouts need at least one environment")
    names = [e.name for e in environments]
    if len(set(names)) != len(names):
        raise ValueError(f"environment names must be unique: {names}")
    jobs = [
        (t if isinstance(t, RolloutTask) else RolloutTask(t), s) for t in tasks for s in range(n)
    ]
    template = session_template(options, sampling, policy, max_steps, keep_frames)
    channel = open_channel(server, template.channel) if isinstance(server, str) else server
    try:
        await asyncio.gather(*(asyncio.to_thread(e.start) for e in environments))
        rollout = RolloutRunner(
            channel,
            template,
            reward,
            on_trajectory,
            StalenessBound(max_version_span, stale, stats if stats is not None else RolloutStats()),
        )
        free: asyncio.Queue[Environment] = asyncio.Queue()
        for environment in environments:
            free.put_nowait(environment)

        async def one(task: RolloutTask, sample: int) -> Trajectory:
            environment = await free.get()
            try:
                return await rollout.run(task, sample, environment)
            finally:
                free.put_nowait(environment)

        async with asyncio.TaskGroup() as group:
            running = [group.create_task(one(task, sample)) for task, sample in jobs]
        finished = [r.result() for r in running]
        return [t for t in finished if not (t.stale and stale == "drop")]
    finally:
        if isinstance(server, str):
            await channel.close()


def session_template(
    options: SessionOptions,
    sampling: Sampling | None,
    policy: str,
    max_steps: int,
    keep_frames: bool,
) -> SessionOptions:
    """Every session's options: `options`, with the arguments given taking precedence."""
    return replace(
        options,
        sampling=sampling or options.sampling,
        policy=policy or options.policy,
        max_steps=max_steps or options.max_steps,
        keep_frames=keep_frames or options.keep_frames,
    )


@dataclass(frozen=True)
class StalenessBound:
    max_version_span: int | None
    action: StaleAction
    stats: RolloutStats


class RolloutRunner:
    """One rollout in one environment: reset, session, staleness, reward, report.

    Shared by run_rollouts (environments in this process) and the Ray pool (one
    runner inside each environment actor, next to its desktop), so a rollout is
    the same work wherever it runs."""

    def __init__(
        self,
        channel: grpc.aio.Channel,
        template: SessionOptions,
        reward: RewardFunction | None,
        on_trajectory: Callable[[Trajectory], None] | None,
        staleness: StalenessBound,
    ) -> None:
        self._channel = channel
        self._template = template
        self._reward = reward
        self._on_trajectory = on_trajectory
        self._staleness = staleness
        self._reporter = RewardReporter(channel)

    async def run(self, task: RolloutTask, sample: int, environment: Environment) -> Trajectory:
        started_at = time.monotonic()
        try:
            backend = await asyncio.to_thread(environment.reset, task)
        except Exception as error:
            trajectory = Trajectory(
                task,
                sample,
                environment.name,
                Outcome.ERROR,
                reason=f"environment {environment.name} could not be reset: {error}",
                seconds=time.monotonic() - started_at,
            )
            return self._done(trajectory)
        try:
            trajectory = await self._session(task, sample, environment, backend, started_at)
            # Before scoring: a reward function may treat a stale trajectory differently.
            if is_stale(trajectory, self._staleness.max_version_span):
                trajectory = replace(trajectory, stale=True)
            if self._reward is not None:
                trajectory = await self._score(trajectory, environment, backend)
        finally:
            await asyncio.to_thread(backend.close)
        return self._done(trajectory)

    async def _session(
        self,
        task: RolloutTask,
        sample: int,
        environment: Environment,
        backend: Backend,
        started_at: float,
    ) -> Trajectory:
        template = self._template
        recording: list[str] = []

        def on_started(started: Started) -> None:
            recording.append(started.recording_id)
            if template.on_started is not None:
                template.on_started(started)

        options = replace(
            template, on_started=on_started, max_steps=task.max_steps or template.max_steps
        )
        outcome = await run_session(self._channel, task.task, backend, options)
        return Trajectory(
            task=task,
            sample=sample,
            environment=environment.name,
            outcome=outcome.outcome,
            steps=await self._steps(outcome),
            answer=outcome.answer,
            reason=outcome.reason,
            session_id=outcome.session_id,
            recording_id=recording[0] if recording else "",
            seconds=time.monotonic() - started_at,
        )

    async def _steps(self, outcome: SessionOutcome) -> tuple[TrajectoryStep, ...]:
        frames = [r.frame for r in outcome.history]
        if self._template.keep_frames:
            frames = await asyncio.to_thread(whole_frames, frames)
        return tuple(
            TrajectoryStep(r.step, frame, r.actions, r.results, r.thought, r.generation)
            for r, frame in zip(outcome.history, frames, strict=True)
        )

    async def _score(
        self, trajectory: Trajectory, environment: Environment, backend: Backend
    ) -> Trajectory:
        assert self._reward is not None
        value = self._reward(Finished(trajectory, environment, backend))
        if inspect.isawaitable(value):
            value = await value
        reward = as_reward(value)
        if reward is None:
            return trajectory
        recorded = False
        if trajectory.session_id:
            recorded = await self._reporter.report(trajectory.session_id, reward)
        return replace(trajectory, reward=reward, reward_recorded=recorded)

    def _done(self, trajectory: Trajectory) -> Trajectory:
        self._staleness.stats.count(trajectory, self._staleness.action)
        if self._on_trajectory is not None:
            self._on_trajectory(trajectory)
        return trajectory


def as_reward(value: RewardValue) -> Reward | None:
    """A reward function's answer as a Reward (see Reward for the shorthands)."""
    if value is None or isinstance(value, Reward):
        return value
    if isinstance(value, bool):
        return Reward(reward=1.0 if value else 0.0, success=value)
    if isinstance(value, int | float):
        return Reward(reward=float(value))
    raise TypeError(f"a reward function returns a Reward, float, bool or None, not {value!r}")
