"""What may cut a running session's wait short, decided in one place.

Every wait of a RunSession stream (the client's next message, a paused session's
hold, the policy's decide()) races the same watchers: a cancel (the client's or an
operator's), the session's --max-session-s, the step's --step-timeout-s and, for
the waits a stop may interrupt, the daemon's shutdown. Which one wins decides how
the stream ends, so the runner and the client stream share this one race instead of
each timing out in its own way: `Interrupted` carries the session's ending, a
shutdown is UNAVAILABLE.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import TypeVar

from holodesk.daemon.errors import Unavailable
from holodesk.daemon.session.registry import SessionRegistry
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.session.values import Ending, SessionOutcome

log = logging.getLogger(__name__)
T = TypeVar("T")


class Interrupted(Exception):  # noqa: N818
    """The session ends here. `after_send`: finish it only once the client got the news
    (a half-close may really be a drop, which must detach instead)."""

    def __init__(self, ending: Ending, *, after_send: bool = False) -> None:
        super().__init__(ending.reason)
        self.ending = ending
        self.after_send = after_send


async def race(
    work: Awaitable[T],
    session: Session,
    registry: SessionRegistry,
    *,
    stop_on_shutdown: bool,
    step_timeout: float | None = None,
) -> T:
    """The work's result, unless the session is cancelled, runs out of time (its
    --max-session-s, or the step's --step-timeout-s, which does not count time spent
    in weight updates: update_pauses.py), or the daemon stops first.

    A plain awaitable that lost is cancelled; a Task is left to its owner (the
    runner aborts the policy's work before it cancels the decide() task)."""
    job = asyncio.ensure_future(work)
    watchers = [asyncio.ensure_future(session.cancelled.wait())]
    if stop_on_shutdown:
        watchers.append(asyncio.ensure_future(registry.shutting_down.wait()))
    session_left = session.seconds_left()
    timeout = step_timeout
    session_bound = session_left is not None and (
        step_timeout is None or session_left <= step_timeout
    )
    if session_bound:
        timeout = max(0.0, session_left or 0.0)
    paused_before = registry.update_pauses.total_s()
    try:
        done, _ = await asyncio.wait(
            [job, *watchers], timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        while not done and not session_bound:
            # A step timeout: extended by what weight updates took meanwhile.
            credit = registry.update_pauses.total_s() - paused_before
            if credit <= 0:
                break
            paused_before += credit
            done, _ = await asyncio.wait(
                [job, *watchers], timeout=credit, return_when=asyncio.FIRST_COMPLETED
            )
    finally:
        for waiter in watchers:
            waiter.cancel()
        if not job.done() and not isinstance(work, asyncio.Task):
            job.cancel()
    if session.cancelled.is_set():
        raise Interrupted(Ending(SessionOutcome.CANCELLED, reason=session.cancel_reason))
    if job.done():
        return job.result()
    if stop_on_shutdown and registry.shutting_down.is_set():
        raise Unavailable(
            f"the daemon is shutting down; session {session.session_id} stopped",
            retry_after_s=5.0,
        )
    if session_bound:
        limit = registry.limits.max_session_s
        reason = f"time limit: the session reached its maximum of {limit:g} s"
        raise Interrupted(Ending(SessionOutcome.TIME_LIMIT, reason=reason))
    reason = (
        f"step {session.step + 1}: the policy did not decide within {step_timeout:g} s "
        "(step timeout)"
    )
    log.warning("session %s: %s", session.session_id, reason)
    raise Interrupted(Ending(SessionOutcome.FAILED, reason=reason))
