"""Compact, readable text for steps and outcomes (plain when not on a terminal).

Nearly every line carries text from the daemon (ids, thoughts, answers, key names,
error messages), so every line is printed through `shown`: no escape sequence
it carries reaches the terminal as one.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from holodesk.client import actions as a
from holodesk.client.events import (
    Held,
    LinkLost,
    Notice,
    Outcome,
    Reconnecting,
    Resumed,
    SafetyNotice,
    Started,
)
from holodesk.client.generation import Generation
from holodesk.client.outcome import SessionOutcome, StepRecord
from holodesk.client.shown import shown

_STATUS_STYLE = {
    a.ActionStatus.OK: "green",
    a.ActionStatus.FAILED: "red",
    a.ActionStatus.REJECTED: "red",
    a.ActionStatus.SKIPPED: "yellow",
    a.ActionStatus.NOT_DELIVERED: "yellow",
}
_OUTCOME_STYLE = {
    Outcome.SUCCEEDED: "bold green",
    Outcome.FAILED: "bold red",
    Outcome.CANCELLED: "bold yellow",
    Outcome.STEP_LIMIT: "bold yellow",
    Outcome.TIME_LIMIT: "bold yellow",
    Outcome.ERROR: "bold red",
}


def _pt(p: a.FramePoint) -> str:
    return f"({p.x:g}, {p.y:g})"


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def describe(action: a.Action) -> str:
    """One line per action, in frame pixels."""
    if isinstance(action, a.Click):
        extra = "".join(f"+{m}" for m in action.modifiers)
        times = f" x{action.count}" if action.count != 1 else ""
        return f"click {_pt(action.point)} {action.button.value}{times}{extra}"
    if isinstance(action, a.Move):
        return f"move {_pt(action.point)}"
    if isinstance(action, a.MouseDown | a.MouseUp):
        verb = "mouse_down" if isinstance(action, a.MouseDown) else "mouse_up"
        where = f" {_pt(action.point)}" if action.point is not None else ""
        return f"{verb} {action.button.value}{where}"
    if isinstance(action, a.Drag):
        return f"drag {' -> '.join(_pt(p) for p in action.path)} {action.button.value}"
    if isinstance(action, a.Scroll):
        return f"scroll {_pt(action.point)} dx={action.dx} dy={action.dy}"
    if isinstance(action, a.TypeText):
        return f"type {_short(action.text)}"
    if isinstance(action, a.KeyChord):
        return f"key {'+'.join(action.keys)}"
    if isinstance(action, a.KeyDown | a.KeyUp):
        verb = "key_down" if isinstance(action, a.KeyDown) else "key_up"
        return f"{verb} {action.key}"
    if isinstance(action, a.Wait):
        return f"wait {action.duration_ms} ms"
    if isinstance(action, a.Done):
        return f"done {_short(action.answer)}"
    if isinstance(action, a.Fail):
        return f"fail {_short(action.reason)}"
    if isinstance(action, a.AskUser):
        return f"ask_user {_short(action.question)}"
    if isinstance(action, a.Navigate):
        return f"navigate {_short(action.url)}"
    return f"unsupported action ({action.reason})"


def version_tag(generation: Generation | None) -> str:
    """A step's versions in a progress line: "v3" when the daemon's policy version 3
    made it, "v2+v3" when its tokens came from both (an update landed while it was
    sampled); "" without versions (a version 0 alone is a policy that has none)."""
    versions = sorted(generation.versions) if generation is not None else []
    if not versions or versions == [0]:
        return ""
    return "+".join(f"v{v}" for v in versions)


def held_line(notice: Held) -> str:
    """The progress line for an operator's hold (rich markup, daemon text escaped)."""
    if notice.held and notice.taken_over:
        return (
            "[yellow]taken over[/]: an operator has the desktop; "
            "the agent waits until it is handed back"
        )
    if notice.held:
        return "[yellow]paused[/] by an operator; the agent waits until it is resumed"
    if notice.taken_over:
        note = f" with a note: {escape(_short(notice.note, 120))}" if notice.note else ""
        return f"[green]handed back[/]{note}; the agent goes on"
    return "[green]resumed[/]; the agent goes on"


def describe_result(result: a.ActionResult | None) -> str:
    if result is None:
        return "no result"
    text = result.status.value
    if result.status is a.ActionStatus.OK and result.duration_ms:
        text += f" {result.duration_ms} ms"
    if result.error:
        text += f": {result.error}"
    return text


class Printer:
    """Prints progress to stderr; the final answer alone goes to stdout (for scripts)."""

    def __init__(self, progress: Console | None = None, answer: Console | None = None) -> None:
        self.progress = progress or Console(stderr=True, highlight=False, soft_wrap=True)
        self.answer = answer or Console(highlight=False, soft_wrap=True)

    def started(self, started: Started) -> None:
        spec = started.frame_spec
        box = f"{spec.max_width or 'any'}x{spec.max_height or 'any'}"
        self._progress(
            f"[bold]session[/] {escape(started.session_id)}  policy {escape(started.policy)}"
            f"  frames <= {box} {spec.encoding.value}"
        )

    def notice(self, notice: Notice) -> None:
        if isinstance(notice, LinkLost):
            self._progress(
                f"[yellow]connection lost[/] ({escape(notice.cause)}): no further action starts"
            )
        elif isinstance(notice, Reconnecting):
            self._progress(
                f"resuming in {notice.delay_s:.1f} s "
                f"(attempt {notice.attempt} of {notice.max_attempts})"
            )
        elif isinstance(notice, Resumed):
            self._progress(
                f"[green]resumed[/] session {escape(notice.session_id)} at step {notice.step}"
                f" ({notice.reported} pending result(s) reported)"
            )
        elif isinstance(notice, SafetyNotice):
            self._progress(f"[yellow]safety:[/] {escape(notice.message)}")
        elif isinstance(notice, Held):
            self._progress(held_line(notice))

    def step(self, record: StepRecord) -> None:
        by_id = {r.action_id: r for r in record.results}
        label = f"step {record.step}"
        tag = version_tag(record.generation)
        if tag:
            label += f" {tag}"
        if record.thought:
            self._progress(f"[dim]{label:<8}  thought: {escape(_short(record.thought, 120))}[/]")
            label = ""
        if record.ending is not None:
            self._progress(f"{label:<8}  {escape(describe(record.ending))}")
            label = ""
        for action in record.actions:
            result = by_id.get(action.action_id)
            style = _STATUS_STYLE.get(result.status, "") if result else "red"
            self._progress(
                f"{label:<8}  {escape(describe(action))}  "
                f"[{style or 'default'}]{escape(describe_result(result))}[/]"
            )
            label = ""

    def outcome(self, outcome: SessionOutcome) -> None:
        style = _OUTCOME_STYLE[outcome.outcome]
        line = f"[{style}]{outcome.outcome.value}[/] after {outcome.steps} step(s)"
        if outcome.reason:
            line += f": {escape(outcome.reason)}"
        self._progress(line)
        if outcome.outcome is Outcome.SUCCEEDED:
            self.answer.print(shown(escape(outcome.answer)), markup=True)

    def _progress(self, line: str) -> None:
        """One line of rich markup whose daemon-supplied parts were escape()d."""
        self.progress.print(shown(line))
