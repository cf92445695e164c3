"""What `holodesk model check` prints: the rendered template, each step, a summary."""

from __future__ import annotations

from typing import TextIO

from holodesk.daemon.model_check.screenshot import Screenshot
from holodesk.daemon.model_check.steps import StepCheck
from holodesk.daemon.model_check.template import TemplateReport

HEAD_CHARS = 800
TAIL_CHARS = 400
RAW_CHARS = 1200


def print_template(report: TemplateReport, out: TextIO) -> None:
    print(f"== (a) chat template of {report.model}", file=out)
    if report.rendered:
        print(
            f"rendered by the {report.source}'s template, {len(report.rendered)} chars:", file=out
        )
        text = report.rendered
        if len(text) <= HEAD_CHARS + TAIL_CHARS:
            print(_indent(text), file=out)
        else:
            skipped = len(text) - HEAD_CHARS - TAIL_CHARS
            print(_indent(text[:HEAD_CHARS]), file=out)
            print(f"    [... {skipped} chars ...]", file=out)
            print(_indent(text[-TAIL_CHARS:]), file=out)
    print(f"prompt tokens: {_count(report.prompt_tokens)}", file=out)
    print(
        f"image tokens: dialect estimate {_count(report.image_tokens_estimate)}, "
        f"processor {_count(report.image_tokens_actual)}",
        file=out,
    )
    for note in report.notes:
        print(f"note: {note}", file=out)
    for problem in report.problems:
        print(f"PROBLEM: {problem}", file=out)
    if report.ok:
        print("template: ok", file=out)


def print_step(step: StepCheck, screenshot: Screenshot, out: TextIO) -> None:
    title = "localization" if step.kind == "locate" else "navigation"
    box = screenshot.target
    print(f"== ({'b' if step.kind == 'locate' else 'c'}) {title}", file=out)
    what = screenshot.locate if step.kind == "locate" else screenshot.task
    print(f"asked: {what}", file=out)
    print(f"target box: x={box.x} y={box.y} w={box.width} h={box.height}", file=out)
    if step.raw_output or step.engine_error is None:
        raw = step.raw_output
        shown = raw if len(raw) <= RAW_CHARS else raw[:RAW_CHARS] + f" [... {len(raw)} chars]"
        print(f"raw output: {shown!r}", file=out)
    if step.parsed:
        print(f"parsed: {step.actions or 'no action'}", file=out)
    print(f"{title}: {'ok' if step.ok else 'FAILED'}: {step.verdict()}", file=out)


def summary(
    template: TemplateReport | None,
    steps: tuple[StepCheck, ...],
    error: str | None,
) -> str:
    parts: list[str] = []
    if template is not None and template.problems:
        parts.append(f"template: {len(template.problems)} problem(s)")
    if error is not None:
        parts.append(error)
    parts.extend(f"{s.kind}: {s.verdict()}" for s in steps if not s.ok)
    if not parts:
        return "model check: PASSED (both answers parse, both clicks land on the target)"
    return "model check: FAILED (" + "; ".join(parts) + ")"


def _count(value: int | None) -> str:
    return "unknown" if value is None else str(value)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
