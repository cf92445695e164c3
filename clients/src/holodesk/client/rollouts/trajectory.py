"""The values of a rollout: what to do (RolloutTask), what happened (Trajectory),
and what it was worth (Reward).

Every step says which policy version made it (the daemon's weights change while
sessions run: TrainerService), so a trajectory knows the range of versions it was
sampled from: what an off-policy trainer bounds (run_rollouts' `max_version_span`)
and weights its importance ratios by."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from holodesk.client import actions as a
from holodesk.client.events import Outcome
from holodesk.client.frames import SentFrame
from holodesk.client.generation import Completion, Generation


@dataclass(frozen=True)
class RolloutTask:
    """One task to roll out. `url` is where a web environment opens its page (None:
    the environment's own); `metadata` is the caller's, handed back untouched (the
    reward function's ground truth, a dataset row id ...)."""

    task: str
    url: str | None = None
    max_steps: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.task.strip():
            raise ValueError("a rollout task needs a non-empty task")
        if self.max_steps < 0:
            raise ValueError(f"max_steps must be 0 or more, got {self.max_steps}")


@dataclass(frozen=True)
class Reward:
    """What a reward function returns; a float is Reward(reward=x), a bool is
    Reward(reward=1.0 or 0.0, success=b), None is no reward."""

    reward: float | None = None
    success: bool | None = None
    note: str = ""


@dataclass(frozen=True)
class TrajectoryStep:
    step: int
    # The frame this step was decided on: its coordinate frame always, its encoded
    # bytes only with keep_frames (else data is b"").
    frame: SentFrame | None
    actions: tuple[a.Action, ...]
    results: tuple[a.ActionResult, ...]
    thought: str = ""
    # Every sampled completion with its logprobs; None for policies without a model.
    generation: Generation | None = None

    @property
    def completion(self) -> Completion | None:
        """The completion the actions came from."""
        return None if self.generation is None else self.generation.chosen_completion

    @property
    def policy_version(self) -> int:
        """The version that made the chosen completion (its newest where an update
        landed while it was sampled); 0 for a policy without versions."""
        return 0 if self.generation is None else self.generation.policy_version

    @property
    def policy_label(self) -> str:
        return "" if self.generation is None else self.generation.policy_label

    @property
    def versions(self) -> frozenset[int]:
        """Every version that sampled a token of this step, any candidate's (repair
        calls included): empty for a policy without versions."""
        return frozenset() if self.generation is None else self.generation.versions

    @property
    def mixed_versions(self) -> bool:
        """The step's tokens came from more than one version: a completion sampled
        across an update, or candidates (a repair call) on either side of one."""
        return len(self.versions) > 1


@dataclass(frozen=True)
class Trajectory:
    task: RolloutTask
    # Which of the task's n rollouts this is (0-based).
    sample: int
    # The environment it ran in (Environment.name).
    environment: str
    outcome: Outcome
    steps: tuple[TrajectoryStep, ...] = ()
    answer: str = ""
    reason: str = ""
    session_id: str = ""
    # The daemon's recording of the session; empty when it was not recorded.
    recording_id: str = ""
    seconds: float = 0.0
    reward: Reward | None = None
    # Whether the daemon wrote the reward into the session's recording.
    reward_recorded: bool = False
    # Its steps span more versions than run_rollouts' `max_version_span` allowed
    # (kept because the caller chose stale="flag", or handed to on_trajectory).
    stale: bool = False

    @property
    def succeeded(self) -> bool:
        return self.outcome is Outcome.SUCCEEDED

    @property
    def logprob(self) -> float | None:
        """Sum of the chosen completions' logprobs over the steps (None if a step has none)."""
        total = 0.0
        for step in self.steps:
            completion = step.completion
            if completion is None or completion.cumulative_logprob is None:
                return None
            total += completion.cumulative_logprob
        return total if self.steps else None

    @property
    def policy_versions(self) -> frozenset[int]:
        """Every version that sampled a token of any step (empty without versions)."""
        return frozenset().union(*(step.versions for step in self.steps))

    @property
    def min_policy_version(self) -> int | None:
        """The oldest version any step's tokens came from; None without versions."""
        return min(self.policy_versions, default=None)

    @property
    def max_policy_version(self) -> int | None:
        """The newest version any step's tokens came from; None without versions."""
        return max(self.policy_versions, default=None)

    @property
    def version_span(self) -> int:
        """How many updates apart its oldest and newest tokens are (max - min): 0 for
        a trajectory made by one version, or by a policy without versions."""
        versions = self.policy_versions
        return max(versions) - min(versions) if versions else 0

    @property
    def mixed_versions(self) -> bool:
        """Some step's tokens came from more than one version (TrajectoryStep)."""
        return any(step.mixed_versions for step in self.steps)
