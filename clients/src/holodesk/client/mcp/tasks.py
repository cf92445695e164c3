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


async def run_task(
    server: str, task: str, backend: Backend, options: SessionOptions, record_root: Path
) -> dict[str, Any]:
    """Run the session to its end; a JSON-ready summary with the report's path."""
    await asyncio.to_thread(record_root.mkdir, parents=True, exist_ok=True)
    options = dataclasses.replace(options, record_dir=record_root, ask_user=no_one_to_ask)
    outcome = await run_session(server, task, backend, options)
    report, report_error = write_page(outcome)
    return summary(outcome, report, report_error)


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
