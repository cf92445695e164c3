"""The `computer` policy: a session whose actions come from ComputerService callers.

`holodesk attach --name NAME` opens RunSession with policy "computer" and task
NAME. Each step, this policy settles the batch the client just executed (its
results arrived with the frame), then waits for the next batch a caller queued
on the desktop (attached_desktops.py) and returns it as the step's actions, with
their coordinates mapped onto the frame the client sees now. With nothing to do
for `heartbeat_s` it returns no actions, which the client answers with a fresh
frame: the wait stays well inside --step-timeout-s and the frame stays recent.
Its sessions are relayed (Session.relayed, set when the session opens with this
policy): while this waits, from the first step on, the session is
WAITING_FOR_CALLER, not THINKING, and a decision without actions (a heartbeat, a
GetFrame refresh) goes out as a refresh that --max-steps does not count.

So the client needs nothing new: its executor, safety guard, emergency stop,
rate limits, recording and resume work as for a model's session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from holodesk.daemon import actions as act
from holodesk.daemon.errors import FailedPrecondition, HolodeskError
from holodesk.daemon.frames import EncodedFrame, FrameSpec, ImageEncoding
from holodesk.daemon.geometry import Point, Size
from holodesk.daemon.policies.base import Decision, Location
from holodesk.daemon.session.attached_desktops import (
    AttachedDesktops,
    Batch,
    Desktop,
    FrameGeometry,
    remap,
)
from holodesk.daemon.steps import StepContext

NAME = "computer"
DESCRIPTION = "actions from ComputerService callers on a desktop its client attached"
DEFAULT_HEARTBEAT_S = 60.0


def heartbeat_for(step_timeout_s: float) -> float:
    """An idle step ends well before the daemon's step timeout would fail it."""
    if step_timeout_s <= 0:
        return DEFAULT_HEARTBEAT_S
    return min(DEFAULT_HEARTBEAT_S, step_timeout_s / 2)


class ComputerPolicy:
    name = NAME
    description = DESCRIPTION

    def __init__(self, desktops: AttachedDesktops, *, heartbeat_s: float) -> None:
        if heartbeat_s <= 0:
            raise ValueError("heartbeat_s must be positive")
        self._desktops = desktops
        self._heartbeat_s = heartbeat_s
        self._ready = False

    @property
    def desktops(self) -> AttachedDesktops:
        """The desktops it relays to (shared with ComputerService)."""
        return self._desktops

    @property
    def ready(self) -> bool:
        return self._ready

    @property
    def history_frames(self) -> int:
        return 1

    def frame_spec(
        self, accepted: tuple[ImageEncoding, ...], screen: Size | None = None
    ) -> FrameSpec:
        # Full size and lossless: the caller reads the screen itself, at its own scale.
        encoding = (
            ImageEncoding.PNG if not accepted or ImageEncoding.PNG in accepted else accepted[0]
        )
        return FrameSpec(encoding=encoding)

    async def start(self) -> None:
        self._ready = True

    async def decide(self, context: StepContext) -> Decision:
        bound = self._desktops.bind(context)
        if isinstance(bound, str):
            return Decision(actions=(act.Fail(bound),), thought=bound)
        desktop = bound
        self._desktops.step(desktop, context)
        while True:
            batch = await self._next(desktop)
            if batch is None:  # idle: a fresh frame (not a step), in time
                desktop.in_flight = Batch((), (), (), asyncio.get_running_loop().create_future())
                return Decision(actions=(), thought="idle: refreshing the frame")
            try:
                kinds = _mapped(batch, context.frame)
            except HolodeskError as error:
                desktop.reject(batch, error)
                continue
            desktop.queue.remove(batch)
            if batch.entries:  # a refresh (no actions) goes out as no step
                batch.step = context.step
            desktop.in_flight = batch
            count = len(kinds)
            thought = f"{count} action(s) from a ComputerService caller" if count else "refresh"
            return Decision(actions=kinds, thought=thought)

    async def _next(self, desktop: Desktop) -> Batch | None:
        """The oldest queued batch (left in the queue), or None after the heartbeat."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._heartbeat_s
        while not desktop.queue:
            desktop.wake.clear()
            left = deadline - loop.time()
            if left <= 0:
                return None
            try:
                await asyncio.wait_for(desktop.wake.wait(), left)
            except TimeoutError:
                return None
        return desktop.queue[0]

    async def locate(
        self, frame: EncodedFrame, descriptions: tuple[str, ...]
    ) -> tuple[Location, ...]:
        raise FailedPrecondition(
            f"policy {NAME}", "does not locate: it only relays actions to attached desktops"
        )

    async def abort(self, session_id: str) -> None:
        self._desktops.session_aborted(session_id)

    async def close(self) -> None:
        self._ready = False


def _mapped(batch: Batch, frame: EncodedFrame) -> tuple[act.ActionKind, ...]:
    """The batch's kinds in the pixels of `frame` (what the client captures now)."""
    now = FrameGeometry.of(frame)
    out = []
    for index, (kind, seen) in enumerate(zip(batch.kinds, batch.seen, strict=True)):
        if seen is None:
            out.append(kind)
            continue
        out.append(act.map_points(kind, _onto(seen, now, f"actions[{index}]")))
    return tuple(out)


def _onto(seen: FrameGeometry, now: FrameGeometry, field: str) -> Callable[[Point], Point]:
    def mapped(point: Point) -> Point:
        return remap(point, seen, now, field)

    return mapped
