"""Desktops that holodesk clients attached, and the work queued for each.

A desktop is a RunSession whose policy is `computer` (computer_policy.py): its
client streams frames and executes actions like any session's, but the actions
come from ComputerService callers (computer_service.py) through the queue kept
here. Each desktop has:

- a name (SessionStart.task), unique in the daemon, and the principal that
  attached it (its owner);
- the geometry of its last frames, so a caller's coordinates, given in the
  pixels of a frame it saw, are mapped onto the frame the client sees now;
- a FIFO of batches (one per Act call, or an empty one to refresh the frame) and
  at most one batch in flight on the client;
- the exactly-once store: every action id a caller sent, with its request's
  fingerprint and its result (or the future of it). An id is never queued twice.

The store and the name outlive one session of the desktop: `holodesk attach`
opens a new session when one reaches the daemon's step or time limit, and the
same owner re-binding the same name keeps the desktop's ids (RETAIN_S).

Only the daemon's event loop touches this state (no locks).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from holodesk.daemon import actions as act
from holodesk.daemon.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
    Unavailable,
)
from holodesk.daemon.frames import EncodedFrame
from holodesk.daemon.geometry import Point, Rect, Size
from holodesk.daemon.session.registry import SessionRegistry
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.steps import StepContext

log = logging.getLogger(__name__)

# Frames of a desktop whose ids callers may still name.
KEPT_FRAMES = 64
# Act/GetFrame calls waiting on one desktop before more are refused.
MAX_QUEUED_BATCHES = 16
# Action ids a desktop remembers (oldest forgotten first).
MAX_REMEMBERED_IDS = 100_000
# How long a desktop whose session left keeps its name and ids for its owner.
RETAIN_S = 600.0
# Whom to tell to retry when a desktop is busy or detached.
RETRY_S = 1.0


@dataclass(frozen=True)
class FrameGeometry:
    """Where a frame's pixels lie: enough to map a point between two frames."""

    size: Size
    source: Rect | None
    display_id: str

    @classmethod
    def of(cls, frame: EncodedFrame) -> FrameGeometry:
        return cls(frame.size, frame.source, frame.display_id)


def remap(point: Point, seen: FrameGeometry, now: FrameGeometry, field: str) -> Point:
    """`point` in `seen`'s pixels, as pixels of `now` (through the virtual desktop)."""
    if seen == now:
        return point
    if seen.source is None or now.source is None:
        if seen.size == now.size:
            return point
        raise FailedPrecondition(
            field, "the desktop's frames changed size and carry no source rectangle to map by"
        )
    desk_x = seen.source.x + point.x * seen.source.width / seen.size.width
    desk_y = seen.source.y + point.y * seen.source.height / seen.size.height
    x = (desk_x - now.source.x) * now.size.width / now.source.width
    y = (desk_y - now.source.y) * now.size.height / now.source.height
    if not (0 <= x <= now.size.width and 0 <= y <= now.size.height):
        raise FailedPrecondition(
            field,
            "the point lies outside what the desktop's client captures now (its display "
            "changed); take a new frame",
        )
    return Point(x, y)


@dataclass(eq=False)
class Entry:
    """One caller action id: what it asked, and its result once known."""

    action_id: str
    fingerprint: bytes
    result: asyncio.Future[act.ActionResult]


@dataclass(eq=False)
class Batch:
    """An Act call's new actions (none: a refresh), as one client step."""

    entries: tuple[Entry, ...]
    kinds: tuple[act.ActionKind, ...]
    # The geometry each kind's coordinates were given in (None: no coordinates).
    seen: tuple[FrameGeometry | None, ...]
    # The id of the frame captured after the batch; an error if it never ran.
    done: asyncio.Future[str]
    # The step it went out as, once sent (0 for a refresh: it is no step).
    step: int = 0


@dataclass(eq=False)
class Desktop:
    name: str
    owner: str
    session_id: str | None
    latest: EncodedFrame | None = None
    # The latest frame as one image (built on first GetFrame when it is a delta).
    latest_standalone: EncodedFrame | None = None
    frames: OrderedDict[str, FrameGeometry] = field(default_factory=OrderedDict)
    queue: deque[Batch] = field(default_factory=deque)
    in_flight: Batch | None = None
    store: OrderedDict[str, Entry] = field(default_factory=OrderedDict)
    # Set when its stream drops or its session leaves; replaced on (re)attach.
    lost: asyncio.Future[None] = field(default_factory=lambda: _new_future())
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    left_at: float | None = None

    def geometry(self, frame_id: str, field_name: str) -> FrameGeometry:
        found = self.frames.get(frame_id)
        if found is None:
            raise InvalidArgument(
                field_name,
                f"unknown frame {frame_id!r} on desktop {self.name!r} (give the id of one "
                f"of its last {KEPT_FRAMES} frames, from GetFrame or Act)",
            )
        return found

    def submit(self, batch: Batch) -> None:
        if len(self.queue) >= MAX_QUEUED_BATCHES:
            raise ResourceExhausted(
                f"desktop {self.name}",
                f"{MAX_QUEUED_BATCHES} requests already wait for this desktop",
                retry_after_s=RETRY_S,
            )
        for entry in batch.entries:
            self.store[entry.action_id] = entry
        while len(self.store) > MAX_REMEMBERED_IDS:
            self.store.popitem(last=False)
        self.queue.append(batch)
        self.wake.set()

    def withdraw(self, batch: Batch) -> bool:
        """Take a batch that never went out back (its caller left): its ids are free."""
        if batch not in self.queue:
            return False
        self.queue.remove(batch)
        self._forget(batch)
        return True

    def reject(self, batch: Batch, error: Exception) -> None:
        """A queued batch that cannot run (a point off the screen): its caller hears
        why, and its ids are free again."""
        self.withdraw(batch)
        _fail(batch.done, error)

    def _forget(self, batch: Batch) -> None:
        for entry in batch.entries:
            if self.store.get(entry.action_id) is entry:
                del self.store[entry.action_id]

    def see_frame(self, frame: EncodedFrame) -> None:
        if self.latest is None or frame.frame_id != self.latest.frame_id:
            self.latest = frame
            self.latest_standalone = None if frame.patches else frame
        self.frames[frame.frame_id] = FrameGeometry.of(frame)
        self.frames.move_to_end(frame.frame_id)
        while len(self.frames) > KEPT_FRAMES:
            self.frames.popitem(last=False)

    def settle(self, results: dict[str, act.ActionResult], sent: tuple[act.Action, ...]) -> bool:
        """Give the in-flight batch its results (daemon ids -> results, in the order
        the actions were sent); False if some are missing (not reported yet)."""
        batch = self.in_flight
        if batch is None:
            return True
        if len(sent) != len(batch.entries) or any(a.action_id not in results for a in sent):
            return False
        for entry, action in zip(batch.entries, sent, strict=True):
            got = results[action.action_id]
            if not entry.result.done():
                entry.result.set_result(
                    act.ActionResult(entry.action_id, got.status, got.error, got.duration_ms)
                )
        self.in_flight = None
        return True

    def fail_queued(self, error: Exception) -> None:
        """Nothing queued ran: its callers hear why, and its ids are free again."""
        while self.queue:
            batch = self.queue.popleft()
            self._forget(batch)
            _fail(batch.done, error)

    def mark_lost(self, why: str) -> None:
        if not self.lost.done():
            self.lost.set_result(None)
        if self.in_flight is not None:
            _fail(
                self.in_flight.done,
                Unavailable(
                    f"desktop {self.name!r} {why} while actions were on it: their results "
                    "are known once its client resumes (send the same ids again then)",
                    retry_after_s=RETRY_S,
                ),
            )
        self.fail_queued(
            Unavailable(
                f"desktop {self.name!r} {why}; nothing of this request ran", retry_after_s=RETRY_S
            )
        )


def _new_future() -> asyncio.Future[None]:
    return asyncio.get_running_loop().create_future()


def _fail(future: asyncio.Future[str], error: Exception) -> None:
    if not future.done():
        future.set_exception(error)
        # Nobody may be waiting any more (the caller left): do not log it as unretrieved.
        future.exception()


SessionLookup = Callable[[str], Session | None]


class AttachedDesktops:
    """Every attached desktop, by name and by session id."""

    def __init__(self) -> None:
        self._by_name: dict[str, Desktop] = {}
        self._by_session: dict[str, Desktop] = {}
        self._lookup: SessionLookup = lambda _: None

    def watch(self, registry: SessionRegistry) -> None:
        """Follow this registry's sessions (their owners, and when they leave)."""

        def lookup(session_id: str) -> Session | None:
            try:
                return registry.get(session_id)
            except NotFound:
                return None

        self._lookup = lookup
        registry.listeners.append(self.session_left)

    def session(self, desktop: Desktop) -> Session | None:
        return None if desktop.session_id is None else self._lookup(desktop.session_id)

    # For the policy ------------------------------------------------------------------

    def bind(self, context: StepContext) -> Desktop | str:
        """The desktop of this session (binding its name on its first step), or why it
        cannot be attached."""
        desktop = self._by_session.get(context.session_id)
        if desktop is not None:
            if desktop.lost.done():  # resumed after a dropped stream
                desktop.lost = _new_future()
            return desktop
        session = self._lookup(context.session_id)
        owner = session.principal if session is not None else "anonymous"
        name = context.task.strip()
        if not name:
            return "the desktop needs a name (SessionStart.task)"
        self._purge()
        desktop = self._by_name.get(name)
        if desktop is not None and desktop.session_id is not None:
            current = self._lookup(desktop.session_id)
            if current is not None and current.ended is None:
                return f"a desktop named {name!r} is already attached; choose another name"
            # Its session ended and its client came back before the registry said so.
            self._release(desktop, current)
        if desktop is None or desktop.owner != owner:
            desktop = Desktop(name=name, owner=owner, session_id=context.session_id)
            self._by_name[name] = desktop
        else:  # the same owner again (a new session after a step or time limit)
            desktop.session_id = context.session_id
            desktop.left_at = None
            desktop.lost = _new_future()
        self._by_session[context.session_id] = desktop
        log.info("desktop %r attached by %s (session %s)", name, owner, context.session_id)
        return desktop

    def step(self, desktop: Desktop, context: StepContext) -> None:
        """A new frame arrived: settle the batch that produced it (a refresh, which is
        no step of the session, is answered by the frame alone)."""
        batch = desktop.in_flight
        if batch is not None and not batch.entries:
            desktop.in_flight = None
        elif batch is not None and context.history and context.history[-1].step == batch.step:
            last = context.history[-1]
            desktop.settle({r.action_id: r for r in last.results}, last.actions)
        desktop.see_frame(context.frame)
        if batch is not None and desktop.in_flight is None and not batch.done.done():
            batch.done.set_result(context.frame.frame_id)

    def session_aborted(self, session_id: str) -> None:
        """Its stream dropped, or it ended: nothing more runs until it resumes."""
        desktop = self._by_session.get(session_id)
        if desktop is None:
            return
        self._settle_from_session(desktop)
        desktop.mark_lost("detached")

    def session_left(self, session: Session) -> None:
        """The session left the daemon: its desktop is no longer attached."""
        desktop = self._by_session.get(session.session_id)
        if desktop is not None:
            self._release(desktop, session)

    def _release(self, desktop: Desktop, session: Session | None) -> None:
        """Unbind the desktop from its session, settling or failing what was on it."""
        session_id = desktop.session_id
        if session_id is not None:
            self._by_session.pop(session_id, None)
        if session is not None:
            self._settle_from_session(desktop, session)
        desktop.mark_lost("left")
        batch = desktop.in_flight
        if batch is not None:  # its client never reported: say so, for good
            for entry in batch.entries:
                if not entry.result.done():
                    entry.result.set_result(
                        act.ActionResult(
                            entry.action_id,
                            act.ActionStatus.FAILED,
                            "result unknown: the desktop's session ended before its client "
                            "reported it (it may or may not have run)",
                        )
                    )
            desktop.in_flight = None
        desktop.session_id = None
        desktop.left_at = time.monotonic()
        log.info("desktop %r left (session %s)", desktop.name, session_id)

    def _settle_from_session(self, desktop: Desktop, session: Session | None = None) -> None:
        """Results the session accepted but no step of the policy saw (the session hit
        its step limit right after them)."""
        batch = desktop.in_flight
        session = session or self.session(desktop)
        if batch is None or session is None or not session.history:
            return
        last = session.history[-1]
        if last.step == batch.step and desktop.settle(session.executed, last.actions):
            frame = session.frames[-1] if session.frames else None
            if frame is not None:
                desktop.see_frame(frame)
            if not batch.done.done():
                batch.done.set_result(desktop.latest.frame_id if desktop.latest else "")

    def _purge(self) -> None:
        cutoff = time.monotonic() - RETAIN_S
        for name, desktop in list(self._by_name.items()):
            if desktop.left_at is not None and desktop.left_at < cutoff:
                del self._by_name[name]

    # For the service -----------------------------------------------------------------

    def get(self, name: str) -> Desktop:
        desktop = self._by_name.get(name)
        if desktop is None or desktop.session_id is None:
            raise NotFound("desktop", name, "no desktop of that name is attached")
        return desktop

    def all(self) -> list[Desktop]:
        return [d for d in self._by_name.values() if d.session_id is not None]
