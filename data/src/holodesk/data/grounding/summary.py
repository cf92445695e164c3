"""A run's verdicts as each benchmark reports them: accuracy, its 95% interval, the
official breakdown, the rate of unparseable answers, and what was left out.

Accuracy is over the samples that have a verdict, and nothing else: a sample of the
data set without one (a run stopped early, a daemon that dropped) is counted in
`left_out` and said so, never scored as a miss, and never hidden. A verdict for a
sample the data set does not hold is an error (the predictions belong to another
data set).

Intervals: Wilson score (95%) for every benchmark but Showdown, whose authors publish a
percentile bootstrap (scipy.stats.bootstrap, 9,999 resamples); ours resamples as many
times with a fixed seed, so the same verdicts always
give the same interval. For a proportion, resampling n verdicts with replacement
gives a hit count distributed Binomial(n, hits/n); we draw those counts directly
(inverse CDF), which is the same bootstrap without n draws per resample.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any

from holodesk.data.grounding.benchmarks import BENCHMARKS, Benchmark, Interval
from holodesk.data.grounding.samples import GroundingSample
from holodesk.data.grounding.scoring import OUTCOMES, Verdict

CONFIDENCE = 0.95
Z_95 = 1.959963984540054  # the standard normal's 97.5th percentile
# scipy.stats.bootstrap's default, which Showdown's harness (clicks/evaluate/utils.py) uses.
BOOTSTRAP_RESAMPLES = 9_999
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class Rate:
    """Hits among scored samples, with the 95% interval (None when nothing was scored)."""

    count: int
    hits: int
    unparsed: int
    low: float | None
    high: float | None

    @property
    def accuracy(self) -> float | None:
        return self.hits / self.count if self.count else None

    @property
    def unparsed_rate(self) -> float | None:
        return self.unparsed / self.count if self.count else None

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "hits": self.hits,
            "accuracy": self.accuracy,
            "interval": [self.low, self.high],
            "unparsed": self.unparsed,
            "unparsed_rate": self.unparsed_rate,
        }


@dataclass(frozen=True)
class Row:
    """One row of a breakdown: a value per key, e.g. ("mobile", "icon")."""

    values: tuple[str, ...]
    rate: Rate


@dataclass(frozen=True)
class Breakdown:
    keys: tuple[str, ...]
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class Summary:
    benchmark: str
    overall: Rate
    outcomes: Mapping[str, int]
    breakdowns: tuple[Breakdown, ...]
    left_out: int
    not_read: int
    interval: Interval
    card_figure: float | None
    bootstrap: Mapping[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """Samples in the data set as read (scored + left out)."""
        return self.overall.count + self.left_out

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "scored": self.overall.count,
            "left_out": self.left_out,
            "not_read": self.not_read,
            "overall": self.overall.to_json(),
            "outcomes": dict(self.outcomes),
            "interval": {"method": self.interval, "confidence": CONFIDENCE, **self.bootstrap},
            "card_figure": self.card_figure,
            "breakdowns": [
                {
                    "keys": list(b.keys),
                    "rows": [{"values": list(r.values), **r.rate.to_json()} for r in b.rows],
                }
                for b in self.breakdowns
            ],
        }

    def table(self) -> str:
        """The summary as plain text: the overall line, then each breakdown."""
        lines = [f"{self.benchmark}: {_rate_text(self.overall)} ({_method(self)})"]
        if self.card_figure is not None:
            lines.append(f"  model card: {self.card_figure:.1f}%")
        lines.append(f"  {self._coverage_line()}")
        unparsed = self.overall.unparsed_rate
        if unparsed is not None:
            lines.append(f"  unparsed answers: {self.overall.unparsed} ({100 * unparsed:.1f}%)")
        for breakdown in self.breakdowns:
            lines.append("")
            lines.append("  by " + " x ".join(breakdown.keys))
            width = max((len(" / ".join(r.values)) for r in breakdown.rows), default=0)
            for row in breakdown.rows:
                label = " / ".join(row.values)
                lines.append(f"    {label:<{width}}  {_rate_text(row.rate, 5)}")
        return "\n".join(lines)

    def _coverage_line(self) -> str:
        line = f"scored {self.overall.count} of {self.total} samples"
        if self.left_out:
            line += f"; {self.left_out} left out (no verdict, not counted as misses)"
        if self.not_read:
            line += f"; {self.not_read} more not read (layout problems)"
        return line


def summarise(
    benchmark: Benchmark | str,
    samples: Sequence[GroundingSample],
    verdicts: Mapping[str, Verdict],
    *,
    not_read: int = 0,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> Summary:
    """Summarise verdicts (by sample id) over a data set's samples.

    `not_read` is how many samples the reader left out (`Dataset.not_read`), stated
    beside the score.
    """
    bench = BENCHMARKS[benchmark] if isinstance(benchmark, str) else benchmark
    ids = {s.id for s in samples}
    unknown = sorted(set(verdicts) - ids)
    if unknown:
        shown = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        raise ValueError(
            f"{len(unknown)} verdict(s) for samples {bench.name} does not hold: {shown}"
        )
    scored = [(s, verdicts[s.id]) for s in samples if s.id in verdicts]

    def rate(pairs: Iterable[tuple[GroundingSample, Verdict]]) -> Rate:
        chosen = list(pairs)
        count = len(chosen)
        hits = sum(1 for _, v in chosen if v.hit)
        unparsed = sum(1 for _, v in chosen if v.outcome == "unparsed")
        if bench.interval == "bootstrap":
            low, high = bootstrap_interval(hits, count, seed=seed, resamples=resamples)
        else:
            low, high = wilson_interval(hits, count)
        return Rate(count=count, hits=hits, unparsed=unparsed, low=low, high=high)

    breakdowns = tuple(
        Breakdown(keys=keys, rows=_rows(keys, scored, rate)) for keys in bench.breakdowns
    )
    outcomes: dict[str, int] = {o: sum(1 for _, v in scored if v.outcome == o) for o in OUTCOMES}
    return Summary(
        benchmark=bench.name,
        overall=rate(scored),
        outcomes=outcomes,
        breakdowns=breakdowns,
        left_out=len(samples) - len(scored),
        not_read=not_read,
        interval=bench.interval,
        card_figure=bench.card_figure,
        bootstrap=({"resamples": resamples, "seed": seed} if bench.interval == "bootstrap" else {}),
    )


def _rows(
    keys: tuple[str, ...],
    scored: list[tuple[GroundingSample, Verdict]],
    rate: Any,
) -> tuple[Row, ...]:
    """One row per combination of values (a sample with several values for a key,
    as OSWorld-G's categories, counts in each of its rows), in sorted order."""
    members: dict[tuple[str, ...], list[tuple[GroundingSample, Verdict]]] = {}
    for sample, verdict in scored:
        per_key = [sample.values(k) or ("(none)",) for k in keys]
        for combination in product(*per_key):
            members.setdefault(combination, []).append((sample, verdict))
    return tuple(Row(values=v, rate=rate(members[v])) for v in sorted(members))


def wilson_interval(hits: int, count: int, z: float = Z_95) -> tuple[float | None, float | None]:
    """The Wilson score interval for hits/count (None, None for no samples)."""
    if count <= 0:
        return None, None
    p = hits / count
    denominator = 1 + z * z / count
    centre = (p + z * z / (2 * count)) / denominator
    half = z * math.sqrt(p * (1 - p) / count + z * z / (4 * count * count)) / denominator
    # Exact at the ends (the formula gives them up to rounding).
    low = 0.0 if hits == 0 else max(0.0, centre - half)
    high = 1.0 if hits == count else min(1.0, centre + half)
    return low, high


def bootstrap_interval(
    hits: int,
    count: int,
    *,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = CONFIDENCE,
) -> tuple[float | None, float | None]:
    """The percentile bootstrap interval of the accuracy of `count` 0/1 verdicts."""
    if count <= 0:
        return None, None
    cdf = _binomial_cdf(count, hits / count)
    rng = random.Random(seed)
    draws = sorted(min(bisect.bisect_left(cdf, rng.random()), count) for _ in range(resamples))
    tail = (1 - confidence) / 2
    return _quantile(draws, tail) / count, _quantile(draws, 1 - tail) / count


def _binomial_cdf(n: int, p: float) -> list[float]:
    if p <= 0:
        return [1.0] * (n + 1)
    if p >= 1:
        return [0.0] * n + [1.0]
    log_p, log_q = math.log(p), math.log1p(-p)
    total, cdf = 0.0, []
    for k in range(n + 1):
        log_pmf = (
            math.lgamma(n + 1)
            - math.lgamma(k + 1)
            - math.lgamma(n - k + 1)
            + k * log_p
            + (n - k) * log_q
        )
        total += math.exp(log_pmf)
        cdf.append(total)
    cdf[-1] = 1.0
    return cdf


def _quantile(ordered: Sequence[int], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def _rate_text(rate: Rate, width: int = 0) -> str:
    if rate.accuracy is None or rate.low is None or rate.high is None:
        return "no samples scored"
    return (
        f"{100 * rate.accuracy:{width}.1f}% [{100 * rate.low:.1f}, {100 * rate.high:.1f}] "
        f"({rate.hits}/{rate.count})"
    )


def _method(summary: Summary) -> str:
    if summary.interval == "bootstrap":
        return (
            f"95% percentile bootstrap, {summary.bootstrap['resamples']} resamples, "
            f"seed {summary.bootstrap['seed']}"
        )
    return "95% Wilson interval"
