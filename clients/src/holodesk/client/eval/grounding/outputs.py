"""A run's score: verdicts from its predictions, RUN_DIR/summary.json and the table.

Only samples with an answer are scored (holodesk.data.grounding.summary): a sample of
the run without one is left out and the summary says why, in `left_out_reasons`:
"failed" (its image or the daemon's refusal of it; tried again by --resume) or "not
asked" (the run stopped before it). Samples the reader could not read are `not_read`
and listed under `problems`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from holodesk.client.eval.grounding.predictions import Failure, Prediction
from holodesk.data.grounding import GroundingSample, Problem, Verdict, score
from holodesk.data.grounding.benchmarks import Benchmark
from holodesk.data.grounding.summary import Summary, summarise

FILE_NAME = "summary.json"


@dataclass(frozen=True)
class Scored:
    """A run's verdicts and summary, with what it left out and why."""

    summary: Summary
    verdicts: Mapping[str, Verdict]
    failures: Mapping[str, Failure]
    # Samples of the run with neither an answer nor a failure (the run stopped first).
    not_asked: int
    problems: tuple[Problem, ...]
    # Every sample of the run has a verdict (nothing failed, nothing left to ask).
    complete: bool

    def to_json(self) -> dict[str, Any]:
        reasons = {"failed": len(self.failures), "not asked": self.not_asked}
        return {
            **self.summary.to_json(),
            "complete": self.complete,
            "left_out_reasons": {k: v for k, v in reasons.items() if v},
            "failures": [f.to_json() for f in self.failures.values()],
            "problems": [p.to_json() for p in self.problems],
        }

    def table(self) -> str:
        lines = [self.summary.table()]
        if self.failures:
            lines.append("")
            lines.append(f"  {len(self.failures)} sample(s) failed (--resume tries them again):")
            lines.extend(f"    {f.sample_id}: {f.error}" for f in list(self.failures.values())[:10])
            if len(self.failures) > 10:
                lines.append(f"    ... and {len(self.failures) - 10} more in {FILE_NAME}")
        if self.not_asked:
            lines.append(f"  {self.not_asked} sample(s) not asked: the run stopped first")
        if self.problems:
            lines.append(
                f"  {len(self.problems)} problem(s) in the data set, listed in {FILE_NAME}"
            )
        return "\n".join(lines)


def score_run(
    benchmark: Benchmark,
    samples: Sequence[GroundingSample],
    answers: Mapping[str, Prediction],
    failures: Mapping[str, Failure],
    problems: Sequence[Problem],
) -> Scored:
    """Score the answers of the run's samples (answers to other ids are ignored)."""
    verdicts = {s.id: score(s, answers[s.id].answer()) for s in samples if s.id in answers}
    failed = {s.id: failures[s.id] for s in samples if s.id in failures and s.id not in answers}
    not_asked = len(samples) - len(verdicts) - len(failed)
    not_read = sum(1 for p in problems if p.sample_id is not None)
    summary = summarise(benchmark, samples, verdicts, not_read=not_read)
    return Scored(
        summary=summary,
        verdicts=verdicts,
        failures=failed,
        not_asked=not_asked,
        problems=tuple(problems),
        complete=summary.left_out == 0,
    )


def write_summary(run_dir: Path, scored: Scored) -> Path:
    path = run_dir / FILE_NAME
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(scored.to_json(), indent=2, ensure_ascii=False) + "\n", "utf-8")
    os.replace(temporary, path)
    return path


def read_summary(run_dir: Path) -> dict[str, Any]:
    """ValueError naming the file when it is missing or unreadable."""
    path = run_dir / FILE_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path} does not exist (the run has not been scored)") from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"cannot read {path}: {error}") from error
    if not isinstance(data, dict) or "overall" not in data:
        raise ValueError(f"{path} is not a grounding summary")
    return data
