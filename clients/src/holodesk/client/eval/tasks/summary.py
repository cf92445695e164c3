"""The suite's summary per domain, read back from the result folders (so a resumed
run's summary covers every run, whichever invocation made it): success rate (runs
that scored 1), mean score, pass@k (tasks with a success in any of their k runs),
and per run the steps taken, seconds and tokens. Runs not scored are counted as
left out, never as failures."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from holodesk.client.eval.tasks.model import Problem, Task
from holodesk.client.eval.tasks.results import RESULT, Layout, read_run, read_score

SUMMARY = "summary.json"


@dataclass(frozen=True)
class DomainSummary:
    domain: str
    tasks: int
    runs: int
    # Runs without a score (set-up failed, daemon dropped, not run yet).
    left_out: int
    success_rate: float | None
    mean_score: float | None
    pass_at_k: float | None
    mean_steps: float | None
    mean_seconds: float | None
    mean_tokens: float | None


def summarize(
    layout: Layout, tasks: Sequence[Task], problems: Sequence[Problem] = ()
) -> dict[str, Any]:
    """summary.json's content: per domain and overall, plus what was skipped."""
    by_domain: dict[str, list[Task]] = {}
    for task in tasks:
        by_domain.setdefault(task.domain, []).append(task)
    domains = [_domain(layout, name, members) for name, members in by_domain.items()]
    overall = _domain(layout, "all", list(tasks))
    return {
        "k": layout.k,
        "model": layout.model,
        "results": str(layout.base),
        "domains": [asdict(d) for d in domains],
        "all": asdict(overall),
        "skipped_tasks": [str(p) for p in problems],
    }


def _domain(layout: Layout, name: str, tasks: Sequence[Task]) -> DomainSummary:
    scores: list[float] = []
    steps: list[float] = []
    seconds: list[float] = []
    tokens: list[float] = []
    passed = 0
    scored_tasks = 0
    left_out = 0
    for task in tasks:
        task_scores = []
        for repeat in range(layout.k):
            folder = layout.run_dir(task, repeat)
            score = read_score(folder / RESULT)
            if score is None:
                left_out += 1
                continue
            task_scores.append(score)
            run = read_run(folder)
            for key, into in (("steps", steps), ("seconds", seconds)):
                if key in run:
                    into.append(float(run[key]))
            if "prompt_tokens" in run:
                tokens.append(float(run["prompt_tokens"]) + float(run.get("completion_tokens", 0)))
        scores.extend(task_scores)
        if task_scores:
            scored_tasks += 1
            passed += any(s >= 1.0 for s in task_scores)
    return DomainSummary(
        domain=name,
        tasks=len(tasks),
        runs=len(scores),
        left_out=left_out,
        success_rate=_mean([1.0 if s >= 1.0 else 0.0 for s in scores]),
        mean_score=_mean(scores),
        pass_at_k=passed / scored_tasks if scored_tasks else None,
        mean_steps=_mean(steps),
        mean_seconds=_mean(seconds),
        mean_tokens=_mean(tokens),
    )


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def write_summary(layout: Layout, summary: dict[str, Any]) -> Path:
    path = layout.base / SUMMARY
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=2) + "\n")
    return path


def table(summary: dict[str, Any]) -> str:
    """The summary as a plain-text table, one line per domain and one for all."""
    k = summary["k"]
    head = (
        "domain",
        "tasks",
        "runs",
        "left out",
        "success",
        f"pass@{k}",
        "steps",
        "s/run",
        "tokens",
    )
    rows = [head]
    for entry in [*summary["domains"], summary["all"]]:
        rows.append(
            (
                entry["domain"],
                str(entry["tasks"]),
                str(entry["runs"]),
                str(entry["left_out"]),
                _percent(entry["success_rate"]),
                _percent(entry["pass_at_k"]),
                _number(entry["mean_steps"], "{:.1f}"),
                _number(entry["mean_seconds"], "{:.1f}"),
                _number(entry["mean_tokens"], "{:.0f}"),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _number(value: float | None, form: str) -> str:
    return "-" if value is None else form.format(value)
