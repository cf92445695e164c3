"""How `holodesk` exits, so scripts can tell endings apart."""

from __future__ import annotations

import enum

from holodesk.client.events import Outcome


class ExitCode(enum.IntEnum):
    SUCCEEDED = 0
    FAILED = 1
    USAGE = 2
    CANCELLED = 3
    STEP_LIMIT = 4
    # The daemon was unreachable, aborted the session, or broke the protocol.
    DAEMON_ERROR = 5
    BACKEND_UNAVAILABLE = 6
    TIME_LIMIT = 7


def for_outcome(outcome: Outcome) -> ExitCode:
    return {
        Outcome.SUCCEEDED: ExitCode.SUCCEEDED,
        Outcome.FAILED: ExitCode.FAILED,
        Outcome.CANCELLED: ExitCode.CANCELLED,
        Outcome.STEP_LIMIT: ExitCode.STEP_LIMIT,
        Outcome.TIME_LIMIT: ExitCode.TIME_LIMIT,
        Outcome.ERROR: ExitCode.DAEMON_ERROR,
    }[outcome]
