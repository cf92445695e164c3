"""`holodesk run --json`: one JSON object per line on stdout for each thing that happens.

For scripts and other programs driving holodesk: the session's start, each step, each
action with its result, each notice (a lost link, a resume, a safety refusal) and the
outcome, in the order they happen, and nothing else on stdout. Every object has an
"event" key; actions carry their fields as the client read them off the wire (points
in frame pixels). JSON escapes every control character, so nothing the daemon says can
act on a terminal that shows this stream.

Each step says which policy version made it ("policy_version", its "policy_label",
and "versions": every version that sampled a token of the step, several when the
daemon's weights changed while it was sampled); the outcome lists every version of
the session ("policy_versions"). Version 0 and empty lists: a policy without
versions.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
from typing import Any, TextIO

from holodesk.client.events import Held, Notice, Started
from holodesk.client.outcome import SessionOutcome, StepRecord
from holodesk.client.render import describe


class JsonPrinter:
    """The Printer's interface (started, notice, step, outcome), as JSON lines."""

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out

    def started(self, started: Started) -> None:
        spec = started.frame_spec
        self._emit(
            "started",
            session_id=started.session_id,
            policy=started.policy,
            max_steps=started.max_steps,
            resumed=started.resumed,
            recording_id=started.recording_id,
            frame_spec={
                "max_width": spec.max_width,
                "max_height": spec.max_height,
                "encoding": spec.encoding.value,
            },
        )

    def notice(self, notice: Notice) -> None:
        if isinstance(notice, Held):
            # An event of its own: the session stops or goes on, for reasons of a person.
            if notice.held:
                self._emit("taken_over" if notice.taken_over else "paused")
            elif notice.taken_over:
                self._emit("handed_back", note=notice.note)
            else:
                self._emit("resumed", note=notice.note)
            return
        self._emit("notice", kind=type(notice).__name__, **_fields(notice))

    def step(self, record: StepRecord) -> None:
        generation = record.generation
        self._emit(
            "step",
            step=record.step,
            thought=record.thought,
            actions=len(record.actions),
            policy_version=generation.policy_version if generation else 0,
            policy_label=generation.policy_label if generation else "",
            versions=sorted(generation.versions) if generation else [],
            ending=describe(record.ending) if record.ending is not None else "",
        )
        by_id = {result.action_id: result for result in record.results}
        for action in record.actions:
            result = by_id.get(action.action_id)
            self._emit(
                "action",
                step=record.step,
                kind=type(action).__name__,
                description=describe(action),
                action=_fields(action),
                result=None if result is None else _fields(result),
            )

    def outcome(self, outcome: SessionOutcome) -> None:
        self._emit(
            "outcome",
            outcome=outcome.outcome.value,
            answer=outcome.answer,
            reason=outcome.reason,
            steps=outcome.steps,
            session_id=outcome.session_id,
            status_code=outcome.status_code,
            recording=outcome.recording,
            policy_versions=sorted(
                {v for step in outcome.history if step.generation for v in step.generation.versions}
            ),
        )

    def _emit(self, event: str, **fields: Any) -> None:
        out = self._out or sys.stdout
        out.write(json.dumps({"event": event, **fields}, default=_plain) + "\n")
        out.flush()


def _fields(value: object) -> dict[str, Any]:
    """A dataclass's fields as JSON-ready values (enums by value, nested dataclasses too)."""
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        raise TypeError(f"not a dataclass instance: {value!r}")
    return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}


def _plain(value: object) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields(value)
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, frozenset | set):
        return sorted(_plain(item) for item in value)
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return value
