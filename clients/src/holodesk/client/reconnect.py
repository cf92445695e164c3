"""When and how often a dropped session stream is re-opened and resumed."""

from __future__ import annotations

import random
from dataclasses import dataclass

import grpc
import grpc.aio
from google.rpc import error_details_pb2
from grpc_status import rpc_status

# What a dead connection looks like from the client: reset, GOAWAY, keepalive
# timeout, the daemon restarting. Any other status is the daemon's answer, except a
# full daemon's RESOURCE_EXHAUSTED that says when to try again (RetryInfo): it keeps
# the session for a resume (its frame memory was spent, frame_memory.py).
RESUMABLE_CODES = frozenset({grpc.StatusCode.UNAVAILABLE})


@dataclass(frozen=True)
class ReconnectPolicy:
    """Exponential backoff with jitter, bounded by attempts and by time."""

    # Tries after a drop; 0 turns resuming off (a drop ends the session).
    max_attempts: int = 8
    # No attempt starts later than this after the drop.
    max_elapsed_s: float = 120.0
    initial_backoff_s: float = 0.5
    max_backoff_s: float = 15.0
    multiplier: float = 2.0
    # Each delay is drawn from [d * (1 - jitter), d], so clients that lost the same
    # daemon do not all come back in the same instant.
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.max_attempts < 0 or self.max_elapsed_s < 0:
            raise ValueError("reconnect limits must not be negative")
        if self.initial_backoff_s < 0 or self.max_backoff_s < self.initial_backoff_s:
            raise ValueError("reconnect backoff must satisfy 0 <= initial <= max")
        if self.multiplier < 1 or not 0 <= self.jitter <= 1:
            raise ValueError("reconnect multiplier must be >= 1 and jitter within 0..1")

    def delay(
        self,
        attempt: int,
        elapsed_s: float,
        rng: random.Random | None = None,
        *,
        at_least_s: float = 0.0,
    ) -> float | None:
        """Seconds to wait before attempt `attempt` (1-based), or None: give up.
        `at_least_s`: the daemon's own RetryInfo, never cut short."""
        if attempt > self.max_attempts:
            return None
        ceiling = min(self.max_backoff_s, self.initial_backoff_s * self.multiplier ** (attempt - 1))
        delay = max(at_least_s, ceiling * (1 - self.jitter * (rng or random).random()))
        if elapsed_s + delay > self.max_elapsed_s:
            return None
        return delay


def is_resumable(error: grpc.aio.AioRpcError, resuming: bool = False) -> bool:
    """Whether to try again: the link died, or (answering a resume) the daemon has not
    yet noticed that the old stream died and still holds the session attached to it."""
    if error.code() in RESUMABLE_CODES:
        return True
    if error.code() == grpc.StatusCode.INTERNAL and not _from_the_daemon(error):
        # gRPC's own INTERNAL: a connection cut in the middle of an HTTP/2 frame reads
        # as "Internal error from Core", not UNAVAILABLE. The daemon's own INTERNAL
        # always carries its google.rpc.Status (interceptor.py), and is final.
        return True
    if error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
        # gRPC's own size limits say no RetryInfo: trying again would fail the same way.
        return retry_after(error) is not None
    return resuming and error.code() == grpc.StatusCode.FAILED_PRECONDITION


def retry_after(error: grpc.aio.AioRpcError) -> float | None:
    """The daemon's RetryInfo on this error, in seconds; None when it gave none."""
    try:
        status = rpc_status.from_call(error)
    except ValueError:  # details that contradict the status itself: not the daemon's
        return None
    if status is None:
        return None
    for detail in status.details:
        info = error_details_pb2.RetryInfo()
        if detail.Unpack(info):
            return float(info.retry_delay.ToTimedelta().total_seconds())
    return None


def _from_the_daemon(error: grpc.aio.AioRpcError) -> bool:
    """Whether the daemon itself answered (its errors carry a google.rpc.Status)."""
    return any(key == "grpc-status-details-bin" for key, _ in error.trailing_metadata() or ())
