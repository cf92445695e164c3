"""One rule for every benchmark: a hit is a point inside the target, or "absent" on a refusal.

The benchmarks' differences (box conventions, edges, polygons, normalisation) live in
their readers, which build the `Target`; so this module has nothing benchmark-specific
and one verdict per (sample, answer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from holodesk.data.grounding.samples import GroundingSample
from holodesk.data.grounding.targets import Refusal

Outcome = Literal["hit", "miss", "absent", "unparsed"]
OUTCOMES: tuple[Outcome, ...] = ("hit", "miss", "absent", "unparsed")


@dataclass(frozen=True)
class Answer:
    """What the policy said for one sample, in the pixels of the sample's own image.

    One of: a point (x, y); `absent` (the target is not in the image: OSWorld-G's
    refusal); or `parsed=False` (nothing usable came back). Use the constructors.
    """

    x: float | None
    y: float | None
    absent: bool = False
    parsed: bool = True

    def __post_init__(self) -> None:
        has_point = self.x is not None and self.y is not None
        if (self.x is None) != (self.y is None):
            raise ValueError("an answer has both x and y or neither")
        if has_point and not all(math.isfinite(v) for v in (self.x, self.y) if v is not None):
            raise ValueError(f"answer point must be finite, got ({self.x}, {self.y})")
        if self.parsed and self.absent == has_point:
            raise ValueError("a parsed answer is either a point or 'absent', exactly one")
        if not self.parsed and (has_point or self.absent):
            raise ValueError("an unparsed answer carries no point and no 'absent'")

    @classmethod
    def point(cls, x: float, y: float) -> Answer:
        return cls(x=x, y=y)

    @classmethod
    def refusal(cls) -> Answer:
        """The policy said the target is not in the image."""
        return cls(x=None, y=None, absent=True)

    @classmethod
    def unparsed(cls) -> Answer:
        return cls(x=None, y=None, absent=False, parsed=False)


@dataclass(frozen=True)
class Verdict:
    """`hit` decides the score; `outcome` says why (for the unparsed rate and the view).

    outcome "absent" is an answer of "absent" on a target that is there: a miss.
    """

    hit: bool
    outcome: Outcome


def score(sample: GroundingSample, answer: Answer) -> Verdict:
    """A Refusal target is hit only by `absent`; any other only by a point inside it."""
    if not answer.parsed:
        return Verdict(hit=False, outcome="unparsed")
    if isinstance(sample.target, Refusal):
        return Verdict(hit=True, outcome="hit") if answer.absent else _miss
    if answer.absent:
        return Verdict(hit=False, outcome="absent")
    assert answer.x is not None
    assert answer.y is not None
    if sample.target.contains(answer.x, answer.y):
        return Verdict(hit=True, outcome="hit")
    return _miss


_miss = Verdict(hit=False, outcome="miss")
