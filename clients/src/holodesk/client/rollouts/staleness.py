"""The staleness bound of run_rollouts, and what it counted.

The daemon's weights change while sessions run (a trainer pushes them through
TrainerService), so one trajectory's steps may come from several policy versions.
An off-policy trainer tolerates only so much of that: prime-rl's
`max_off_policy_steps`, TRL's and verl's staleness thresholds, NeMo-RL's
trajectory age. Here the bound is on the trajectory itself: the distance between
the oldest and newest version that sampled any of its tokens
(`Trajectory.version_span`). The trainer's own lag (its current version against a
trajectory's newest) it knows better than we do, and checks itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from holodesk.client.rollouts.trajectory import Trajectory

# "drop": left out of run_rollouts' list; "flag": kept, with Trajectory.stale set.
StaleAction = Literal["drop", "flag"]


@dataclass
class RolloutStats:
    """What one or more run_rollouts calls did, updated as each rollout finishes.

    The caller passes one in (`run_rollouts(..., stats=stats)`) and reads it during
    the call (from on_trajectory) or after it; one object passed to several calls
    adds them up, as a training loop counting over its whole run wants. Why an
    out-parameter and not a new return type: every caller of run_rollouts reads a
    list of trajectories, and a dropped trajectory is, by choice, not in it."""

    # Rollouts finished, stale ones included (dropped or not).
    finished: int = 0
    # Over the bound and left out of the returned list (stale="drop").
    dropped: int = 0
    # Over the bound and kept with Trajectory.stale (stale="flag").
    flagged: int = 0
    # Trajectories with a step whose tokens came from more than one version.
    mixed: int = 0
    # Every policy version that sampled a token of any finished trajectory.
    policy_versions: set[int] = field(default_factory=set)

    @property
    def stale(self) -> int:
        return self.dropped + self.flagged

    def count(self, trajectory: Trajectory, action: StaleAction) -> None:
        self.finished += 1
        self.mixed += trajectory.mixed_versions
        self.policy_versions |= trajectory.policy_versions
        if trajectory.stale:
            if action == "drop":
                self.dropped += 1
            else:
                self.flagged += 1


def check_bound(max_version_span: int | None, action: str) -> None:
    """ValueError for a bound or an action run_rollouts cannot apply."""
    if max_version_span is not None and max_version_span < 0:
        raise ValueError(f"max_version_span must be 0 or more (or None), got {max_version_span}")
    if action not in get_args(StaleAction):
        raise ValueError(f"stale must be 'drop' or 'flag', got {action!r}")


def is_stale(trajectory: Trajectory, max_version_span: int | None) -> bool:
    """Its tokens came from versions more than `max_version_span` apart (None: no
    bound). A trajectory without versions (a policy that has none, an ERROR before
    any step) is never stale."""
    return max_version_span is not None and trajectory.version_span > max_version_span
