"""run_task: one whole holodesk session, as `holodesk run` runs it, and its report.

The session is the client's own (holodesk.client.session.run_session) with the
options `holodesk mcp` was started with (the same flags as `holodesk run`: safety,
connection, display, policy), recorded under the server's recordings folder, and
rendered as the page `holodesk report` writes next to the recording. The MCP host
gets the outcome, the answer, a summary of every step and the paths to open.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from holodesk.client.outcome import SessionOutcome, StepRecord
from holodesk.client.prompt import NoUserError
from holodesk.client.render import describe, describe_result
from holodesk.client.session import SessionOptions, run_session
from holodesk.data.format import RecordingError
from holodesk.data.report import write_report
from holodesk.data.stepview import LoadedRecording
from holodesk.platform.base import Backend


def no_one_to_ask(question: str) -> str:
    """ask_user for a session under MCP: stdin and stdout are the host's protocol, so
    there is no terminal to ask on; the model's question fails and it goes on without."""
    raise NoUserError(
        f"no one can answer mid-task through holodesk mcp (the model asked: {question!r}); "
        "give everything the task needs in the task itself"
    )


# Told after every step: (step, the step limit or None, one line about it).
Progress = Callable[[int, int | None, str], Awaitable[None]]


async def run_task(
    server: str,
    task: str,
    backend: Backend,
    options: SessionOptions,
    record_root: Path,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the session to its end; a JSON-ready summary with the report's path.

    `progress` hears of every step as it ends (MCP progress notifications: a host
    shows them, and they tell it a long task is alive rather than hung)."""
    await asyncio.to_thread(record_root.mkdir, parents=True, exist_ok=True)
    options = dataclasses.replace(options, record_dir=record_root, ask_user=no_one_to_ask)
    told: list[asyncio.Task[None]] = []
    if progress is not None:
        options = dataclasses.replace(options, on_step=_telling(options, progress, told))
    try:
        outcome = await run_session(server, task, backend, options)
    finally:
        # In order, and every one settled before the result (a host drops progress
        # that comes after it); a host gone away must not fail the task.
        await asyncio.gather(*told, return_exceptions=True)
    report, report_error = write_page(outcome)
    return summary(outcome, report, report_error)


def _telling(
    options: SessionOptions, progress: Progress, told: list[asyncio.Task[None]]
) -> Callable[[StepRecord], None]:
    """on_step: the options' own (progress on stderr), then the host's notification."""
    printed = options.on_step
    limit = options.max_steps or None
    loop = asyncio.get_running_loop()
    previous: asyncio.Task[None] | None = None

    def on_step(record: StepRecord) -> None:
        nonlocal previous
        if printed is not None:
            printed(record)
        actions = "; ".join(describe(action) for action in record.actions)
        line = f"step {record.step}: {record.thought or actions}"
        after = previous

        async def tell() -> None:
            if after is not None:
                await asyncio.gather(after, return_exceptions=True)
            await progress(record.step, limit, line)

        previous = loop.create_task(tell())
        told.append(previous)

    return on_step


def write_page(outcome: SessionOutcome) -> tuple[str, str]:
    """`holodesk report`'s page beside the recording: (its path, '') or ('', why not)."""
    if not outcome.recording:
        return "", "the session left no recording"
    recording_dir = Path(outcome.recording)
    try:
        recording = LoadedRecording.load(recording_dir)
        out = recording_dir.resolve().parent / f"{recording.recording_id}.html"
        return str(write_report(recording, out)), ""
    except (RecordingError, OSError) as error:
        return "", f"the report could not be written: {error}"


def summary(outcome: SessionOutcome, report: str, report_error: str) -> dict[str, Any]:
    result: dict[str, Any] = {
        "outcome": outcome.outcome.value,
        "answer": outcome.answer,
        "reason": outcome.reason,
        "steps": outcome.steps,
        "session_id": outcome.session_id,
        "recording": outcome.recording,
        "report": report,
        "history": [_step(record) for record in outcome.history],
    }
    if report_error:
        result["report_error"] = report_error
    return result


def _step(record: StepRecord) -> dict[str, Any]:
    results = {r.action_id: r for r in record.results}
    return {
        "step": record.step,
        "thought": record.thought,
        "actions": [
            {"action": describe(action), "result": describe_result(results.get(action.action_id))}
            for action in record.actions
        ],
    }
