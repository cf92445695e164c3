"""The daemon's log output: text or JSON lines, tagged with the session they concern.

The session runner binds its session id, the step being decided and the ids of
the actions just sent to context variables (`bind`); `ContextFilter` copies them
onto every record logged meanwhile, from the daemon or from a library it calls.
Each RPC runs in a task of its own and tasks copy the context they start in (the
policy's decide task too), so concurrent sessions never see each other's ids.

`--log-format json` writes one JSON object per line:

    {"time": "2026-03-20T10:00:00.123+00:00", "level": "INFO",
     "logger": "holodesk.daemon.session.session_runner", "message": "...",
     "session_id": "3f2a...", "step": 2, "action_ids": ["3f2a...-2-0"]}

with "exception" holding a traceback where there is one. Both formats pass
through logredact's filter, so a credential never reaches the output, and through
`CuttingFilter`, so no value a caller sent makes a line longer than a few KiB (a
30 MiB action id once wrote 150 MB of log in 3.6 s). A session's task is logged
by its length unless the operator asks for its text (`holodeskd --log-task`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

from holodesk.daemon import logredact

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

SESSION_ID: ContextVar[str | None] = ContextVar("holodesk_session_id", default=None)
STEP: ContextVar[int | None] = ContextVar("holodesk_step", default=None)
ACTION_IDS: ContextVar[tuple[str, ...]] = ContextVar("holodesk_action_ids", default=())

# LogRecord attributes the context adds (and `extra=` may set instead).
CONTEXT_FIELDS = ("session_id", "step", "action_ids")

# A string or bytes argument of a log call is cut to this many characters...
MAX_LOG_VALUE_CHARS = 1024
# ...and a whole message (or a traceback) to this many.
MAX_LOG_MESSAGE_CHARS = 16384
# `extra={UNCUT: True}`: a record whose values are known bounded and wanted whole
# (the task text an operator asked for with --log-task; the contract bounds it).
UNCUT = "holodesk_uncut"


def bind(
    *,
    session_id: str | None = None,
    step: int | None = None,
    action_ids: Sequence[str] | None = None,
) -> None:
    """Tag this task's log records from now on (None: leave that field as it is)."""
    if session_id is not None:
        SESSION_ID.set(session_id)
    if step is not None:
        STEP.set(step)
    if action_ids is not None:
        ACTION_IDS.set(tuple(action_ids))


def task_text(task: str, *, full: bool) -> str:
    """How a session's task appears in its "started" line."""
    return repr(task) if full else f"a task of {len(task)} characters"


def cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def _cut_value(value: Any) -> Any:
    if isinstance(value, str):
        return cut(value, MAX_LOG_VALUE_CHARS)
    if isinstance(value, bytes | bytearray) and len(value) > MAX_LOG_VALUE_CHARS:
        return cut(repr(bytes(value[: MAX_LOG_VALUE_CHARS + 1])), MAX_LOG_VALUE_CHARS)
    return value


class CuttingFilter(logging.Filter):
    """Cuts long argument values, then the whole message and traceback, to bounds."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, UNCUT, False):
            return True
        args = record.args
        if isinstance(args, tuple):
            record.args = tuple(_cut_value(a) for a in args)
        elif isinstance(args, dict):
            record.args = {k: _cut_value(v) for k, v in args.items()}
        if isinstance(record.msg, str) and len(record.msg) > MAX_LOG_MESSAGE_CHARS:
            record.msg = cut(record.msg, MAX_LOG_MESSAGE_CHARS)
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to logging's own report
            return True
        if len(message) > MAX_LOG_MESSAGE_CHARS:
            record.msg, record.args = cut(message, MAX_LOG_MESSAGE_CHARS), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = cut(record.exc_text, MAX_LOG_MESSAGE_CHARS)
        return True


class ContextFilter(logging.Filter):
    """Copies the bound session id, step and action ids onto each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "session_id", None) is None:
            record.session_id = SESSION_ID.get()
        if getattr(record, "step", None) is None:
            record.step = STEP.get()
        if not getattr(record, "action_ids", None):
            record.action_ids = ACTION_IDS.get()
        return True


def context_of(record: logging.LogRecord) -> dict[str, Any]:
    """The record's session fields that are set."""
    found: dict[str, Any] = {}
    session_id = getattr(record, "session_id", None)
    if session_id:
        found["session_id"] = session_id
    step = getattr(record, "step", None)
    if step is not None:
        found["step"] = step
    action_ids = getattr(record, "action_ids", ())
    if action_ids:
        found["action_ids"] = list(action_ids)
    return found


class TextFormatter(logging.Formatter):
    """The classic line, with ``[session=... step=N]`` appended where bound."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        line = super().formatMessage(record)
        context = context_of(record)
        if not context:
            return line
        parts = [f"session={context['session_id']}"] if "session_id" in context else []
        if "step" in context:
            parts.append(f"step={context['step']}")
        if "action_ids" in context:
            parts.append(f"actions={','.join(context['action_ids'])}")
        return f"{line} [{' '.join(parts)}]"


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **context_of(record),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        # default=str: a stray non-JSON value in a message argument never loses the line.
        return json.dumps(entry, ensure_ascii=False, default=str)


def formatter(log_format: LogFormat) -> logging.Formatter:
    if log_format == "json":
        return JsonFormatter()
    if log_format == "text":
        return TextFormatter()
    raise ValueError(f"unknown log format {log_format!r}: use one of {', '.join(LOG_FORMATS)}")


def make_handler(log_format: LogFormat, stream: TextIO) -> logging.Handler:
    """A stream handler in `log_format`, with the context and redaction filters.

    Filters sit on the handler, not a logger: a logger's filters skip records its
    children propagate, a handler's see every record it emits. Context first, then
    cutting (so redaction scans kilobytes, not what a caller sent), then redaction,
    which sees the final record.
    """
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter(log_format))
    handler.addFilter(ContextFilter())
    handler.addFilter(CuttingFilter())
    handler.addFilter(logredact.RedactingFilter())
    return handler


def configure(level: str | int, log_format: LogFormat, stream: TextIO) -> logging.Handler:
    """Route the root logger to `stream` in `log_format` (what `holodeskd` does)."""
    root = logging.getLogger()
    handler = make_handler(log_format, stream)
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    return handler
