"""How `--dialect auto` ranks the dialects it tried, and how it breaks ties.

Each dialect ran the same trials (a Locate and a navigation step per bundled
screenshot). The score rule, in order:

1. most clicks that land on the target (the answer parsed and its point is inside
   the box): a dialect that reads the model's coordinates wrongly parses but misses;
2. most answers that parse;
3. smallest mean distance of the parsed clicks to their target (misses that are
   near beat misses that are far).

Dialects equal on all three read the model's answers identically (holo and
holotron share a parser, coordinates and prompt and differ only in how the
screenshot is resized), so answers cannot tell them apart. The tie rule then asks
what answers cannot:

4. the image rule that matches the model's own processor: the smallest gap
   between the dialect's image-token estimate and the processor's real count for
   the screenshot (only known when the chat-template part loaded a processor);
5. the cheapest prompt: fewest image tokens per screenshot (same answers for less
   prefill);
6. the daemon's default dialect, then the dialect's name.

No winner at all when no dialect parsed a single answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from holodesk.daemon.dialects import DEFAULT_DIALECT
from holodesk.daemon.model_check.steps import StepCheck


@dataclass(frozen=True)
class DialectScore:
    dialect: str
    trials: tuple[StepCheck, ...]
    # Image tokens the dialect spends on one screenshot (None: its resize rule cannot say).
    image_tokens: int | None = None
    # |estimate - the processor's count| for the screenshot (None: no processor loaded).
    processor_gap: int | None = None
    # Chat-template problems found with this dialect's messages (part (a)).
    template_problems: tuple[str, ...] = ()

    @property
    def parsed(self) -> int:
        return sum(1 for t in self.trials if t.parsed)

    @property
    def landed(self) -> int:
        return sum(1 for t in self.trials if t.ok)

    @property
    def parse_rate(self) -> float:
        return self.parsed / len(self.trials) if self.trials else 0.0

    @property
    def landing_rate(self) -> float:
        return self.landed / len(self.trials) if self.trials else 0.0

    @property
    def mean_distance_px(self) -> float | None:
        distances = [t.distance_px for t in self.trials if t.parsed and t.distance_px is not None]
        return sum(distances) / len(distances) if distances else None

    def answer_key(self) -> tuple[int, int, float]:
        """Rules 1-3, bigger is better: what the answers say."""
        mean = self.mean_distance_px
        return (self.landed, self.parsed, -(math.inf if mean is None else mean))

    def tie_key(self) -> tuple[float, float, bool, str]:
        """Rules 4-6, smaller is better: what breaks a tie on answers."""
        gap = math.inf if self.processor_gap is None else float(self.processor_gap)
        tokens = math.inf if self.image_tokens is None else float(self.image_tokens)
        return (gap, tokens, self.dialect != DEFAULT_DIALECT, self.dialect)


@dataclass(frozen=True)
class Ranking:
    scores: tuple[DialectScore, ...]  # best first
    # The winner (None: no dialect parsed any answer).
    winner: DialectScore | None
    # Dialects whose answers scored exactly as the winner's (the winner included);
    # one entry: no tie.
    tied: tuple[str, ...]
    # Which rule decided among `tied` ("" when nothing was tied).
    tie_rule: str


def rank(scores: Sequence[DialectScore]) -> Ranking:
    ordered = tuple(sorted(scores, key=_sort_key))
    if not ordered or ordered[0].parsed == 0:
        return Ranking(ordered, None, (), "")
    best = ordered[0]
    tied = tuple(s for s in ordered if s.answer_key() == best.answer_key())
    return Ranking(ordered, best, tuple(s.dialect for s in tied), _deciding_rule(tied))


def _sort_key(score: DialectScore) -> tuple[tuple[float, ...], tuple[float, float, bool, str]]:
    landed, parsed, distance = score.answer_key()
    return ((-landed, -parsed, -distance), score.tie_key())


def _deciding_rule(tied: tuple[DialectScore, ...]) -> str:
    """The first tie rule on which the winner beats every other tied dialect."""
    if len(tied) < 2:
        return ""
    best, rest = tied[0], tied[1:]
    names = (
        "the processor's image-token count",
        "fewest image tokens per screenshot",
        "the daemon's default dialect",
        "name order",
    )
    best_key = best.tie_key()
    remaining = list(rest)
    for index, name in enumerate(names):
        remaining = [o for o in remaining if o.tie_key()[index] == best_key[index]]
        if not remaining:
            return name
    return names[-1]
