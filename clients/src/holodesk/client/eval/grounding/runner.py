"""Ask the daemon about every sample, K Locate calls in flight, and append each answer.

Each sample is one Locate call with its instruction as the one description, its image
sent as it is (its own pixels: every point that comes back is in the sample's pixels,
where its target is). The first answer's `PolicyPinning` (what answered) is handed to
`on_pinning` before anything is written, so the caller writes or checks the run's
manifest first; the samples before it go one at a time, the rest `concurrency` at a
time. A later answer from a different policy stops the run (the daemon was restarted
with another model): its answers would not belong to this run.

A sample whose image cannot be read, or that the daemon refuses for itself (a bad
argument, a deadline), becomes a Failure line and the run goes on, unless
`stop_on_problem`. A refusal every sample would get (unreachable, not allowed: the
daemon dropped) stops the run with RunStoppedError; what was answered stays written.
A refusal about the daemon rather than the sample (a stopping daemon's CANCELLED)
is asked again first (locate/refusals.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import grpc
import grpc.aio

from holodesk.client.eval.grounding.predictions import Failure, Prediction
from holodesk.client.exit_codes import ExitCode
from holodesk.client.locate.locate import ImageError, image_frame, locate_frame
from holodesk.client.locate.refusals import FATAL_CODES, asked_again
from holodesk.client.locations import PolicyPinning
from holodesk.data.grounding import GroundingSample


class RunStoppedError(Exception):
    """The run cannot go on; the message says why and `code` is the exit status."""

    def __init__(self, message: str, code: ExitCode = ExitCode.DAEMON_ERROR) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Counts:
    answered: int = 0
    failed: int = 0


# The pinning of the first answer; None when the daemon does not report one.
OnPinning = Callable[[PolicyPinning | None], None]
OnSample = Callable[[GroundingSample, Prediction | Failure], None]


async def run_samples(
    channel: grpc.aio.Channel,
    samples: Sequence[GroundingSample],
    write: Callable[[Prediction | Failure], None],
    *,
    on_pinning: OnPinning,
    on_sample: OnSample | None = None,
    policy: str = "",
    concurrency: int = 8,
    timeout_s: float | None = None,
    stop_on_problem: bool = False,
) -> Counts:
    """Ask about every sample of `samples`, each answer or failure handed to `write`
    (a line of predictions.jsonl) as it comes (see the module's docstring)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be 1 or more, got {concurrency}")
    counts = Counts()
    first: list[PolicyPinning | None] = []

    async def one(sample: GroundingSample) -> None:
        entry, pinning = await _ask(channel, sample, policy, timeout_s)
        if isinstance(entry, Prediction):
            if not first:
                on_pinning(pinning)  # may raise RunStoppedError: nothing written yet
                first.append(pinning)
            elif pinning != first[0]:
                raise RunStoppedError(_changed(first[0], pinning))
            counts.answered += 1
        else:
            counts.failed += 1
        write(entry)
        if on_sample is not None:
            on_sample(sample, entry)
        if isinstance(entry, Failure) and stop_on_problem:
            raise RunStoppedError(
                f"sample {sample.id!r}: {entry.error} (--on-problem stop)", ExitCode.FAILED
            )

    pending = list(samples)
    # One at a time until the first answer says what answers (its manifest first).
    while pending and not first:
        await one(pending.pop(0))
    queue: asyncio.Queue[GroundingSample] = asyncio.Queue()
    for sample in pending:
        queue.put_nowait(sample)

    async def worker() -> None:
        while not queue.empty():
            await one(queue.get_nowait())

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(concurrency, queue.qsize())):
                group.create_task(worker())
    except* RunStoppedError as stopped:
        raise stopped.exceptions[0] from None
    return counts


async def _ask(
    channel: grpc.aio.Channel, sample: GroundingSample, policy: str, timeout_s: float | None
) -> tuple[Prediction | Failure, PolicyPinning | None]:
    try:
        data = await asyncio.to_thread(sample.image.load)
        frame = await asyncio.to_thread(image_frame, data, sample.image.name)
    except OSError as error:
        return Failure(sample.id, f"cannot read {sample.image.name}: {error}"), None
    except ImageError as error:
        return Failure(sample.id, str(error)), None
    if (frame.width, frame.height) != (sample.width, sample.height):
        # Its target is in the annotation's pixels: a point in other pixels means nothing.
        return Failure(
            sample.id,
            f"{sample.image.name} is {frame.width}x{frame.height}, its annotation says "
            f"{sample.width}x{sample.height}",
        ), None
    started = time.perf_counter()
    try:
        answer = await asked_again(
            lambda: locate_frame(
                channel, frame, [sample.instruction], policy=policy, timeout_s=timeout_s
            )
        )
    except grpc.aio.AioRpcError as error:
        code = error.code()
        message = f"{code.name if code is not None else 'UNKNOWN'}: {error.details()}"
        if code in FATAL_CODES or code == grpc.StatusCode.NOT_FOUND:
            # NOT_FOUND: no such --policy; every sample would get it.
            raise RunStoppedError(f"the daemon refused sample {sample.id!r}: {message}") from error
        return Failure(sample.id, f"the daemon refused it: {message}"), None
    except ValueError as error:
        return Failure(sample.id, str(error)), None
    (location,) = answer.locations
    return Prediction.of(sample.id, location, time.perf_counter() - started), answer.pinning


_PINNING_FIELDS = (
    "policy",
    "model",
    "engine",
    "dialect",
    "prompt_hash",
    "resize_rule",
    "coordinates",
    "sampling",
    "policy_version",
    "policy_version_label",
)


def _changed(before: PolicyPinning | None, now: PolicyPinning | None) -> str:
    if before is None or now is None:
        return "the daemon's answers stopped or started saying which policy answered"
    fields = [name for name in _PINNING_FIELDS if getattr(before, name) != getattr(now, name)]
    changes = ", ".join(f"{n} {getattr(before, n)!r} -> {getattr(now, n)!r}" for n in fields)
    return f"the daemon's policy changed during the run ({changes})"
