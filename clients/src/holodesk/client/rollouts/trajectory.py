"""The values of a rollout: what to do (RolloutTask), what happened (Trajectory),
and what it was worth (Reward)."""

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
