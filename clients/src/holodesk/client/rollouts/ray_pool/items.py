"""What a pool yields besides trajectories, and what it counts.

A rollout whose environment died under it (its actor, its node) or hung past its
time limit produced no trajectory: it is yielded as a Lost, with the reason, so
that nothing disappears without a word. A lost attempt is retried on another
environment while the caller's retry budget lasts (`retrying` says whether it
will be); each rollout ends as exactly one Trajectory or one final Lost.
"""

from __future__ import annotations

from dataclasses import dataclass

from holodesk.client.rollouts.trajectory import RolloutTask, Trajectory


@dataclass(frozen=True)
class Lost:
    task: RolloutTask
    # Which of the task's n rollouts (0-based), as Trajectory.sample.
    sample: int
    # The environment it was lost in, and the Ray node that environment ran on.
    environment: str
    node: str
    reason: str
    # 1 for the first try of this rollout, 2 for its first retry ...
    attempt: int
    # Another attempt follows (the retry budget was not spent).
    retrying: bool


PoolItem = Trajectory | Lost


@dataclass
class PoolCounts:
    """Updated as a pool's rollouts end: read it for a progress bar, or after."""

    # Trajectories yielded (any outcome: a FAILED session is a finished rollout).
    done: int = 0
    # Attempts lost (each also counted in retried or given_up).
    lost: int = 0
    # Lost attempts handed to another environment.
    retried: int = 0
    # Rollouts lost for good: their final attempt was lost and no retry was left.
    given_up: int = 0
    # Environments killed for hanging past their time limit, and replaced.
    hung: int = 0
    # Environments started in place of dead or hung ones.
    replaced: int = 0
