"""Keeping a session alive across dropped streams: the channel, the outage, the words.

The session decides *when* to resume (its stream broke, it holds a resume token and
the error is resumable); this module holds what that needs and nothing of the
conversation: the channel to (re)open, how long to back off in an outage, and what
to tell the user when the session could not be resumed or the daemon refused it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import grpc
import grpc.aio

from holodesk.client.channel import ChannelSettings, check_settings, open_channel
from holodesk.client.reconnect import ReconnectPolicy, retry_after


class Connector:
    """The channel a session talks over: its own (fresh for each reconnect) when
    given an address, else the caller's (and gRPC's own reconnect backoff)."""

    def __init__(self, target: str | grpc.aio.Channel, settings: ChannelSettings) -> None:
        self._target = target
        self._settings = settings
        self._owned: grpc.aio.Channel | None = None
        if isinstance(target, str):
            check_settings(target, settings)  # bad settings fail now, before any input

    @property
    def name(self) -> str:
        return self._target if isinstance(self._target, str) else ""

    async def open(self) -> grpc.aio.Channel:
        if not isinstance(self._target, str):
            return self._target
        await self.close()
        self._owned = open_channel(self._target, self._settings)
        return self._owned

    async def close(self) -> None:
        owned, self._owned = self._owned, None
        if owned is not None:
            await owned.close()


@dataclass
class Outage:
    started: float
    attempts: int = 0
    cause: str = ""


class Recovery:
    """One session's outages: each failed attempt backs off by the policy (and the
    daemon's RetryInfo hint); an answered resume ends the outage."""

    def __init__(self, policy: ReconnectPolicy) -> None:
        self._policy = policy
        self._outage: Outage | None = None

    def next_delay(self, error: grpc.aio.AioRpcError) -> float | None:
        """Counts an attempt; the seconds to wait before the next, None to give up."""
        if self._outage is None:
            self._outage = Outage(time.monotonic())
        outage = self._outage
        outage.attempts += 1
        outage.cause = describe(error)
        hinted = retry_after(error) or 0.0
        elapsed = time.monotonic() - outage.started
        return self._policy.delay(outage.attempts, elapsed, at_least_s=hinted)

    @property
    def attempts(self) -> int:
        return self._outage.attempts if self._outage is not None else 0

    def resumed(self) -> None:
        self._outage = None

    def gave_up_reason(self, session_id: str) -> str:
        """Why the session ended after `next_delay` said to give up."""
        outage = self._outage or Outage(time.monotonic())
        if self._policy.max_attempts == 0:
            return f"the stream to the daemon dropped ({outage.cause}); resuming is turned off"
        elapsed = time.monotonic() - outage.started
        return (
            f"lost the stream to the daemon and could not resume session "
            f"{session_id}: {outage.attempts - 1} attempt(s) in {elapsed:.0f} s, the last: "
            f"{outage.cause}"
        )


def stream_error_reason(
    error: grpc.aio.AioRpcError, *, resuming: bool, session_id: str, where: str
) -> str:
    """Why the session ended on an error it will not resume from; `where` names the
    daemon's address ("" for a caller's channel)."""
    code = error.code()
    if resuming and code == grpc.StatusCode.NOT_FOUND:
        return (
            f"session {session_id} was lost: the daemon no longer knows it "
            f"({describe(error)}); the steps shown ran, nothing more will"
        )
    if not session_id and code == grpc.StatusCode.UNAVAILABLE:
        at = f" at {where}" if where else ""
        return f"could not reach the daemon{at}: {describe(error)}"
    return f"the daemon ended the stream: {describe(error)}"


def describe(error: grpc.aio.AioRpcError) -> str:
    code = error.code()
    return f"{code.name if code is not None else 'UNKNOWN'}: {error.details() or 'no details'}"


def status_name(error: grpc.aio.AioRpcError, default: str = "") -> str:
    code = error.code()
    return code.name if code is not None else default
