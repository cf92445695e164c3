"""A logging filter that keeps credentials out of log output.

The daemon never logs a credential on purpose (auth failures are logged by
cause); this is the second line of defence, for whatever a library or a stray
repr might print: anything after ``Bearer`` and anything shaped like one of our
tokens (``hdk_...``) becomes ``[REDACTED]``, in messages and tracebacks alike.
Installed on the root handlers by `holodeskd`; `install()` does it elsewhere.
"""

from __future__ import annotations

import logging
import re

REDACTED = "[REDACTED]"
_PATTERNS = (
    # A credential after "Bearer" (RFC 6750 token68 characters, 8 or more: not prose).
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]{8,}"),
    re.compile(r"(hdk_)[A-Za-z0-9_\-]{8,}"),
)


def redact(text: str) -> str:
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


class RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to logging's own report
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            # Format the traceback now, so the redacted text is what handlers print.
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def install(logger: logging.Logger | None = None) -> RedactingFilter:
    """Add the filter to every handler of `logger` (default: the root logger).

    Handlers, not the logger: a logger's filters skip records propagated from
    its children, a handler's see every record it is about to emit.
    """
    target = logger if logger is not None else logging.getLogger()
    installed = RedactingFilter()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(installed)
    return installed
