"""The client's half of one RunSession stream, after its SessionStart.

A reader task drains the client's messages into a queue as they come, so a client
`cancel` is seen at once, even while the policy thinks (it cancels the session;
it is never queued), and the step loop takes observations from the queue within
their limits: --first-observation-timeout-s for the first one on this stream,
--idle-timeout-s for each later one. Past a limit the session ends TIME_LIMIT and
its slot is free for someone else. A broken stream is `StreamLost` (the session
detaches); a half-close ends the session CANCELLED once the client has been told.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from holodesk.daemon import convert
from holodesk.daemon.errors import FailedPrecondition, HolodeskError, InvalidArgument
from holodesk.daemon.session.registry import SessionRegistry
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.session.settings import SessionSettings
from holodesk.daemon.session.step_race import Interrupted, race
from holodesk.daemon.session.values import Ending, SessionOutcome
from holodesk.proto.limits import REASON_CHARS, clip
from holodesk.proto.v1 import agent_pb2

log = logging.getLogger(__name__)


class EndOfStream:
    """The client half-closed its stream."""


class StreamLost(Exception):  # noqa: N818
    """The client's stream broke (not a protocol error): the session detaches."""


_EOF = EndOfStream()
_Item = agent_pb2.RunSessionRequest | EndOfStream | BaseException


class ClientStream:
    """Reads one session's client messages; `start` once the session is open."""

    def __init__(
        self,
        requests: AsyncIterator[agent_pb2.RunSessionRequest],
        registry: SessionRegistry,
        settings: SessionSettings,
    ) -> None:
        self._requests = requests
        self._registry = registry
        self._settings = settings
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        # No observation has arrived on this stream yet (the first-observation limit).
        self._first_observation = True

    def start(self, session: Session) -> None:
        self._reader = asyncio.create_task(self._read(session), name=f"read-{session.session_id}")

    def stop(self) -> None:
        if self._reader is not None:
            self._reader.cancel()

    async def next_observation(self, session: Session) -> agent_pb2.Observation:
        """The client's next observation, its shape checked (its results and frame are
        converted where they are used); a cancel, a shutdown or a limit cuts it short."""
        item = await race(
            self._client_turn(session), session, self._registry, stop_on_shutdown=True
        )
        if isinstance(item, HolodeskError):
            raise item
        if isinstance(item, BaseException):
            raise StreamLost(f"{type(item).__name__}: {item}") from item
        if isinstance(item, EndOfStream):
            raise Interrupted(
                Ending(SessionOutcome.CANCELLED, reason="the client closed its stream"),
                after_send=True,
            )
        kind = item.WhichOneof("event")
        if kind == "observation":
            return convert.observation_from_pb(item.observation, "observation")
        if kind == "start":
            raise FailedPrecondition("start", "the session has already started", kind="PROTOCOL")
        raise InvalidArgument("event", "empty message: set observation or cancel")

    async def _client_turn(self, session: Session) -> _Item:
        """The client's next message, within the first-observation or idle limit:
        past it the session ends TIME_LIMIT and its slot is free for someone else."""
        first = self._first_observation
        settings = self._settings
        limit = (settings.first_observation_timeout_s if first else settings.idle_timeout_s) or None
        try:
            item = await asyncio.wait_for(self._queue.get(), limit)
        except TimeoutError:
            what = "no first observation" if first else "idle: no observation"
            reason = f"time limit: {what} within {limit:g} s"
            log.info("session %s: %s", session.session_id, reason)
            raise Interrupted(Ending(SessionOutcome.TIME_LIMIT, reason=reason)) from None
        self._first_observation = False
        return item

    async def _read(self, session: Session) -> None:
        try:
            async for request in self._requests:
                if request.WhichOneof("event") == "cancel":
                    # Never refused for its length (a stop must stop): cut instead.
                    reason = clip(request.cancel.reason, REASON_CHARS) or "cancelled by the client"
                    if session.ended is None:
                        session.cancel(reason)
                    continue
                await self._queue.put(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the stream broke: hand the error to the loop
            await self._queue.put(exc)
        else:
            await self._queue.put(_EOF)
