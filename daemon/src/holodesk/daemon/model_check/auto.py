"""`holodesk model check --dialect auto`: which dialect does this model speak?

Every registered dialect (candidates.py) runs, unconstrained, the same trials
on every bundled screenshot: one Locate and one navigation step each, through
a real `ModelPolicy` on one engine started once (a 12B checkpoint loads once,
not once per dialect). A dialect that sends tools or anything else through the
engine API does so here exactly as in the daemon: the check only swaps the
dialect in front of the engine. Each dialect's parse rate, click-landing rate
and mean miss are reported, the ranking rule of scoring.py picks the winner,
and winner_file.py writes it as a dialect file the daemon loads. No dialect
parsing any answer is its own result: exit 1, and no file is written.

With `--data BENCHMARK:PATH` (data.py) every dialect also locates each of that
grounding data set's first samples, scored by the benchmark's own rule, and those
trials count in its parse and click-landing rates like the bundled ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from holodesk.daemon.dialects import Dialect
from holodesk.daemon.engines.base import Engine, EngineError
from holodesk.daemon.model_check import winner_file
from holodesk.daemon.model_check.candidates import candidate_dialects
from holodesk.daemon.model_check.check import CheckOptions, Exit
from holodesk.daemon.model_check.data import DataTrials, check_sample
from holodesk.daemon.model_check.progress import with_countdown
from holodesk.daemon.model_check.scoring import DialectScore, Ranking, rank
from holodesk.daemon.model_check.screenshot import Screenshot, bundled_screenshots
from holodesk.daemon.model_check.steps import StepCheck, check_locate, check_navigate
from holodesk.daemon.model_check.template import (
    TemplateReport,
    inspect_template,
    load_template_owner,
    processor_image_tokens,
)
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.policies.registry import create_policy
from holodesk.data.grounding import GroundingSample

AUTO = "auto"
# Options that name a dialect: auto chooses the dialect itself.
_DIALECT_OPTIONS = ("dialect", "dialect_file")
# Options only the chat-template part reads when a server holds the model itself.
_TEMPLATE_OPTIONS = ("trust_remote_code", "revision")


@dataclass(frozen=True)
class AutoResult:
    ranking: Ranking | None
    # The winner file, when one was written.
    written: Path | None
    error: str | None
    exit: Exit


@dataclass(frozen=True)
class _Processor:
    """The checkpoint's own processor, when the template part could load it."""

    processor: Any
    tokenizer: Any
    # Its image tokens per bundled screenshot (None: it names no image token).
    image_tokens: tuple[int | None, ...]


async def run_auto(
    options: CheckOptions,
    output: Path,
    *,
    screenshots: Sequence[Screenshot] | None = None,
    dialects: tuple[str, ...] | None = None,
    out: TextIO | None = None,
    console: Console | None = None,
    data: DataTrials | None = None,
) -> AutoResult:
    """Try every candidate dialect, print the table, write the winner to `output`.

    `data`: grounding samples every dialect also locates (--data), scored by their
    benchmark's rule."""
    console = console or Console(file=out, highlight=False, width=None if out is None else 120)
    shots = tuple(screenshots or bundled_screenshots())
    try:
        candidates = candidate_dialects(dialects)
        engine = _engine(options, candidates[0])
    except (ValueError, OSError) as exc:
        return _finish(console, AutoResult(None, None, f"bad options: {exc}", Exit.USAGE))
    names = ", ".join(d.name for d in candidates)
    extra = ""
    if data is not None:
        extra = f", {len(data.samples)} sample(s) of {data.benchmark} ({data.path})"
        if data.problems:
            extra += f" ({data.problems} problem(s) in it left out)"
    console.print(
        f"model check --dialect auto: {options.model} via {options.engine}; "
        f"dialects {names}; {len(shots)} screenshot(s){extra}, decoding unconstrained"
    )
    processor = _load_processor(options, shots, console) if options.template else None
    timeout = getattr(engine, "start_timeout_s", None)
    try:
        await with_countdown(
            engine.start(),
            console,
            f"the {options.engine} engine ({options.model})",
            float(timeout) if isinstance(timeout, int | float) else None,
        )
    except (EngineError, OSError, ValueError) as exc:
        error = f"the {options.engine} engine could not start: {exc}"
        return _finish(console, AutoResult(None, None, error, Exit.ENGINE))
    try:
        samples = data.samples if data is not None else ()
        scores = await _score_all(candidates, engine, options, shots, processor, console, samples)
    finally:
        await engine.close()
    ranking = rank(scores)
    print_table(ranking, console, data)
    return _finish(console, _conclude(ranking, output, options))


def _engine(options: CheckOptions, first: Dialect) -> Engine:
    dropped = _DIALECT_OPTIONS + (_TEMPLATE_OPTIONS if options.engine == "openai" else ())
    policy_options = {k: v for k, v in options.all_options().items() if k not in dropped}
    policy = create_policy(options.engine, {**policy_options, "dialect": first.name})
    if not isinstance(policy, ModelPolicy):
        raise ValueError(f"{options.engine} is not a model policy")
    return policy.engine


def _load_processor(
    options: CheckOptions, shots: tuple[Screenshot, ...], console: Console
) -> _Processor | None:
    source = options.tokenizer or options.model
    try:
        processor, tokenizer = load_template_owner(
            source,
            trust_remote_code=options.trust_remote_code(),
            revision=options.policy_options.get("revision") or None,
        )
    except EngineError as exc:
        console.print(f"note: no chat template check ({exc}); ties use the cheaper image rule")
        return None
    counts = tuple(processor_image_tokens(processor, tokenizer, shot) for shot in shots)
    return _Processor(processor, tokenizer, counts)


async def _score_all(
    candidates: tuple[Dialect, ...],
    engine: Engine,
    options: CheckOptions,
    shots: tuple[Screenshot, ...],
    processor: _Processor | None,
    console: Console,
    samples: Sequence[GroundingSample] = (),
) -> list[DialectScore]:
    scores: list[DialectScore] = []
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console
    )
    with progress:
        per_dialect = len(shots) * 2 + len(samples)
        task = progress.add_task("dialects", total=len(candidates) * per_dialect)
        for dialect in candidates:
            policy = ModelPolicy(dialect, engine, parse_retries=options.parse_retries)
            trials: list[StepCheck] = []
            for shot in shots:
                progress.update(task, description=f"{dialect.name}: locate")
                trials.append(await check_locate(policy, shot))
                progress.advance(task)
                progress.update(task, description=f"{dialect.name}: navigate")
                trials.append(await check_navigate(policy, shot))
                progress.advance(task)
            for sample in samples:
                progress.update(task, description=f"{dialect.name}: data")
                trials.append(await check_sample(policy, sample))
                progress.advance(task)
            scores.append(_score(dialect, tuple(trials), shots, processor))
    return scores


def _score(
    dialect: Dialect,
    trials: tuple[StepCheck, ...],
    shots: tuple[Screenshot, ...],
    processor: _Processor | None,
) -> DialectScore:
    estimates = [dialect.image_tokens(shot.size) for shot in shots]
    known = [e for e in estimates if e is not None]
    tokens = sum(known) // len(known) if len(known) == len(estimates) and known else None
    gap: int | None = None
    problems: tuple[str, ...] = ()
    if processor is not None:
        pairs = [
            (e, a)
            for e, a in zip(estimates, processor.image_tokens, strict=True)
            if e is not None and a is not None
        ]
        if pairs and len(pairs) == len(shots):
            gap = sum(abs(e - a) for e, a in pairs)
        report = TemplateReport(model=dialect.name)
        inspect_template(report, processor.processor, processor.tokenizer, dialect, shots[0])
        problems = tuple(report.problems)
    return DialectScore(dialect.name, trials, tokens, gap, problems)


def print_table(ranking: Ranking, console: Console, data: DataTrials | None = None) -> None:
    table = Table(title="dialects, best first (unconstrained decoding)")
    columns = ["dialect", "parsed", "clicks landed", "mean miss px", "image tokens", "notes"]
    if data is not None:
        # Of the clicks landed, those on the data set (its benchmark's rule).
        columns.insert(3, f"{data.benchmark} hits")
    for column in columns:
        table.add_column(column)
    for score in ranking.scores:
        total = len(score.trials)
        mean = score.mean_distance_px
        notes = [_first_failure(score.trials)] if score.landed < total else []
        if score.processor_gap is not None:
            notes.append(f"processor gap {score.processor_gap}")
        notes.extend(f"template: {p}" for p in score.template_problems)
        cells = [
            score.dialect,
            f"{score.parsed}/{total} ({score.parse_rate:.0%})",
            f"{score.landed}/{total} ({score.landing_rate:.0%})",
            "-" if mean is None or math.isinf(mean) else f"{mean:.0f}",
            "?" if score.image_tokens is None else str(score.image_tokens),
            "; ".join(n for n in notes if n),
        ]
        if data is not None:
            on_data = [t for t in score.trials if t.kind == "data"]
            cells.insert(3, f"{sum(t.ok for t in on_data)}/{len(on_data)}")
        table.add_row(*cells)
    console.print(table)


def _first_failure(trials: tuple[StepCheck, ...]) -> str:
    failed = next((t for t in trials if not t.ok), None)
    if failed is None:
        return ""
    verdict = failed.verdict()
    return f"{failed.kind}: {verdict[:117] + '...' if len(verdict) > 120 else verdict}"


def _conclude(ranking: Ranking, output: Path, options: CheckOptions) -> AutoResult:
    winner = ranking.winner
    if winner is None:
        error = (
            "no dialect parsed any answer: the model answers in none of the built-in "
            f"formats; {output} was not written"
        )
        return AutoResult(ranking, None, error, Exit.FAILED)
    try:
        winner_file.write(ranking, output, options.model, options.engine)
    except (OSError, ValueError) as exc:
        return AutoResult(ranking, None, f"cannot write {output}: {exc}", Exit.FAILED)
    passed = winner.landed == len(winner.trials)
    return AutoResult(ranking, output, None, Exit.OK if passed else Exit.FAILED)


def _finish(console: Console, result: AutoResult) -> AutoResult:
    console.print(summary(result), soft_wrap=True)
    return result


def summary(result: AutoResult) -> str:
    if result.error is not None:
        return f"model check --dialect auto: NO WINNER ({result.error})"
    assert result.ranking is not None
    assert result.ranking.winner is not None
    winner = result.ranking.winner
    total = len(winner.trials)
    tie = ""
    if len(result.ranking.tied) > 1:
        tie = f"; tied on answers with {', '.join(result.ranking.tied[1:])}, "
        tie += f"decided by {result.ranking.tie_rule}"
    verdict = "PASSED" if result.exit == Exit.OK else "BEST GUESS, clicks missed"
    return (
        f"model check --dialect auto: {verdict}: {winner.dialect} "
        f"({winner.parsed}/{total} parsed, {winner.landed}/{total} clicks landed{tie}); "
        f"wrote {result.written}: holodeskd --policy-opt dialect_file={result.written}"
    )
