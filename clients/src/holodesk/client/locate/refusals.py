"""What a refused Locate call means for a batch: stop, ask again, or record it.

- FATAL_CODES: refusals every other image would get too (unreachable, not allowed):
  the batch stops instead of failing them all.
- RETRIED_CODES: answers about the daemon, not the image: a gRPC core that is
  stopping answers calls CANCELLED or INTERNAL, a call can be ABORTED under it.
  Recorded as the image's failure they would stand as an answer; asked again they
  meet the daemon's real state (an answer, or UNAVAILABLE once it is gone).
- Anything else (a bad argument, a deadline) is the image's own failure.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import grpc
import grpc.aio

FATAL_CODES = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNIMPLEMENTED,
    }
)
RETRIED_CODES = frozenset(
    {grpc.StatusCode.CANCELLED, grpc.StatusCode.ABORTED, grpc.StatusCode.INTERNAL}
)
# Pauses before each new try: a stopping daemon closes its port within them.
RETRY_DELAYS_S = (0.5, 2.0)

T = TypeVar("T")


async def asked_again(
    call: Callable[[], Awaitable[T]], delays_s: Sequence[float] = RETRY_DELAYS_S
) -> T:
    """`call()`, made again after each pause of `delays_s` while it is refused with one
    of RETRIED_CODES; the last refusal, or any other, is raised."""
    for delay in delays_s:
        try:
            return await call()
        except grpc.aio.AioRpcError as error:
            if error.code() not in RETRIED_CODES:
                raise
        await asyncio.sleep(delay)
    return await call()
