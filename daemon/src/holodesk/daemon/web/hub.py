"""The live view's side of the sessions: what each shows, and who is watching.

`LiveHub` is one of the registry's observers (session_events.py). On each event
it updates a small per-session summary (state, the last steps' thoughts,
actions and results, the newest frame) and offers a JSON message to every
viewer's queue. Everything is bounded so that watching costs a session nothing:

- a viewer's queue holds `VIEWER_QUEUE` messages; a viewer that falls that far
  behind (a slow link, a background tab) is cut off, and its browser's
  EventSource reconnects and starts again from a fresh snapshot: the daemon never
  waits for a viewer and never buffers more for one;
- frames are announced at most every `FRAME_INTERVAL_S` per session (the newest
  wins), and a viewer fetches the thumbnail only when it shows it; each frame is
  made into a thumbnail at most once, in a worker thread, `THUMBNAIL_WORKERS` at
  a time for the whole daemon;
- a session keeps its last `KEPT_STEPS` steps, texts cut to `TEXT_CHARS`;
- of the sessions that left, the last `KEPT_LEFT_FRAMES` keep what the page showed
  of them: their final summary (steps with their results, the ending) and their
  last frame, so an ended session keeps its screen and results on the page, also
  after a reload or a reconnect (the snapshot's "ended").
"""

from __future__ import annotations

import asyncio
import io
import logging
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from holodesk.daemon import frame_pixels
from holodesk.daemon.actions import ActionResult, describe
from holodesk.daemon.frames import EncodedFrame
from holodesk.daemon.generation import StepGeneration
from holodesk.daemon.session.registry import SessionRegistry
from holodesk.daemon.session.session_events import (
    FrameTaken,
    ResultsReported,
    SessionEvent,
    StateChanged,
    StepDecided,
)
from holodesk.daemon.session.sessions import Session
from holodesk.proto.limits import clip

log = logging.getLogger(__name__)

VIEWER_QUEUE = 256
FRAME_INTERVAL_S = 0.2
KEPT_STEPS = 20
TEXT_CHARS = 4000
THUMBNAIL_WORKERS = 2
THUMBNAIL_BOX = (1280, 800)
THUMBNAIL_QUALITY = 75
# Sessions that left whose final summary and last frame are kept (the page shows an
# ended session's screen and results; as many as the page keeps ended cards).
KEPT_LEFT_FRAMES = 10

Message = dict[str, Any]


@dataclass
class _Step:
    step: int
    thought: str
    note: str
    actions: list[str]
    results: list[Message] = field(default_factory=list)
    # Which policy version made it (0: a policy without versions), its label, and
    # every version that sampled one of its tokens (two when an update landed
    # while it was sampled): the weights change while sessions run.
    policy_version: int = 0
    policy_label: str = ""
    versions: list[int] = field(default_factory=list)

    def to_json(self) -> Message:
        return {
            "step": self.step,
            "thought": self.thought,
            "note": self.note,
            "actions": self.actions,
            "results": self.results,
            "policy_version": self.policy_version,
            "policy_label": self.policy_label,
            "versions": self.versions,
        }


@dataclass
class _Watched:
    """What the live view keeps of one session."""

    steps: deque[_Step] = field(default_factory=lambda: deque(maxlen=KEPT_STEPS))
    frame: EncodedFrame | None = None
    # Counts the frames announced; a thumbnail URL carries it, so browsers never
    # show a cached older one.
    frame_seq: int = 0
    announced_at: float = 0.0
    pending_announce: asyncio.TimerHandle | None = None
    thumbnail: tuple[str, bytes] | None = None
    taken_over: bool = False
    # Its summary (steps included) as it left the registry; None while it runs.
    final: Message | None = None


class Viewer:
    """One browser's event stream: a bounded queue, and whether it was cut off."""

    def __init__(self, session_id: str | None) -> None:
        self.session_id = session_id
        self.queue: asyncio.Queue[Message] = asyncio.Queue(maxsize=VIEWER_QUEUE)
        self.lagged = asyncio.Event()

    def offer(self, message: Message) -> None:
        if self.lagged.is_set():
            return
        if self.session_id is not None and message.get("session_id") not in (
            None,
            self.session_id,
        ):
            return
        try:
            self.queue.put_nowait(message)
        except asyncio.QueueFull:
            self.lagged.set()  # its stream ends; the browser reconnects with a snapshot


class LiveHub:
    def __init__(self, registry: SessionRegistry) -> None:
        self._registry = registry
        self._watched: dict[str, _Watched] = {}
        self._left: OrderedDict[str, _Watched] = OrderedDict()
        self._viewers: set[Viewer] = set()
        self._encoders = asyncio.Semaphore(THUMBNAIL_WORKERS)
        self.closing = asyncio.Event()
        # Counts the session updates offered. Every summary carries it, so a page can
        # tell a control's answer from a newer event (a stop's answer may arrive after
        # the event that the session ended) and keep the newer.
        self._revision = 0

    # Wiring ------------------------------------------------------------------------

    def attach(self) -> None:
        self._registry.observers.append(self.observe)
        self._registry.listeners.append(self.session_left)
        for session in self._registry.list():
            self._watched.setdefault(session.session_id, _Watched())

    def detach(self) -> None:
        if self.observe in self._registry.observers:
            self._registry.observers.remove(self.observe)
        if self.session_left in self._registry.listeners:
            self._registry.listeners.remove(self.session_left)
        for watched in self._watched.values():
            if watched.pending_announce is not None:
                watched.pending_announce.cancel()
        self.closing.set()

    def subscribe(self, session_id: str | None = None) -> Viewer:
        viewer = Viewer(session_id)
        self._viewers.add(viewer)
        return viewer

    def unsubscribe(self, viewer: Viewer) -> None:
        self._viewers.discard(viewer)

    @property
    def viewers(self) -> int:
        return len(self._viewers)

    # Observer ----------------------------------------------------------------------

    def observe(self, session: Session, event: SessionEvent) -> None:
        if session.session_id in self._left:
            return  # it left: what the page shows of it is final
        watched = self._watched.setdefault(session.session_id, _Watched())
        if isinstance(event, FrameTaken):
            watched.frame = event.frame
            self._announce_frame(session.session_id, watched)
        elif isinstance(event, StepDecided):
            generation = event.generation
            step = _Step(
                event.step,
                clip(event.thought, TEXT_CHARS),
                clip(event.note, TEXT_CHARS),
                [clip(describe(a.kind), TEXT_CHARS) for a in event.actions],
                policy_version=generation.policy_version if generation else 0,
                policy_label=clip(generation.policy_label, TEXT_CHARS) if generation else "",
                versions=_versions(generation),
            )
            watched.steps.append(step)
            self._offer({"type": "step", "session_id": session.session_id, **step.to_json()})
            self._offer_state(session, watched)
        elif isinstance(event, ResultsReported):
            results = [_result_json(r) for r in event.results]
            for kept in watched.steps:
                if kept.step == event.step:
                    kept.results = results
            self._offer(
                {
                    "type": "results",
                    "session_id": session.session_id,
                    "step": event.step,
                    "results": results,
                }
            )
        elif isinstance(event, StateChanged):
            if not session.paused:
                watched.taken_over = False
            self._offer_state(session, watched)

    def session_left(self, session: Session) -> None:
        """Registry listener: the session is gone (ended, expired or dropped)."""
        watched = self._watched.get(session.session_id)
        if watched is None:
            self._offer({"type": "gone", "session_id": session.session_id})
            return
        if watched.pending_announce is not None:
            # Its last frame is the screen it ended on: announced now, not dropped.
            watched.pending_announce.cancel()
            self._announce_now(session.session_id, watched)
        watched.final = self.summary(session, with_steps=True)
        del self._watched[session.session_id]
        self._left[session.session_id] = watched
        while len(self._left) > KEPT_LEFT_FRAMES:
            self._left.popitem(last=False)
        self._offer({"type": "gone", **watched.final})

    # Operator side -----------------------------------------------------------------

    def take_over(self, session: Session) -> None:
        """Pause it and say a person has the desktop (until it is resumed)."""
        session.pause(taken_over=True)
        watched = self._watched.setdefault(session.session_id, _Watched())
        watched.taken_over = True
        self._offer_state(session, watched)

    def snapshot(self, session_id: str | None = None) -> Message:
        """The sessions running, and those that left lately ("ended", newest first)."""
        sessions = [
            self.summary(s, with_steps=True)
            for s in self._registry.list()
            if session_id is None or s.session_id == session_id
        ]
        ended = [
            watched.final
            for left_id, watched in reversed(self._left.items())
            if watched.final is not None and (session_id is None or left_id == session_id)
        ]
        return {"type": "snapshot", "sessions": sessions, "ended": ended}

    def summary(self, session: Session, *, with_steps: bool = False) -> Message:
        watched = (
            self._watched.get(session.session_id)
            or self._left.get(session.session_id)
            or _Watched()
        )
        ended = session.ended
        out: Message = {
            "session_id": session.session_id,
            "task": clip(session.task, TEXT_CHARS),
            "state": session.state.value,
            "step": session.step,
            "max_steps": session.max_steps,
            "policy": session.policy_name,
            "principal": session.principal,
            "client_hostname": session.request.client.hostname,
            "client_os": session.request.client.os,
            "started_at": session.started_at.isoformat(),
            "taken_over": watched.taken_over,
            "revision": self._revision,
            "frame_seq": watched.frame_seq if watched.frame is not None else 0,
            "ended": None
            if ended is None
            else {"outcome": ended.outcome.value, "answer": ended.answer, "reason": ended.reason},
        }
        if with_steps:
            out["steps"] = [s.to_json() for s in watched.steps]
        return out

    async def thumbnail(self, session_id: str) -> bytes | None:
        """The session's newest frame as a JPEG thumbnail; None before its first frame
        (or for a session that left longer ago than the last KEPT_LEFT_FRAMES)."""
        watched = self._watched.get(session_id) or self._left.get(session_id)
        if watched is None or watched.frame is None:
            return None
        frame = watched.frame
        cached = watched.thumbnail
        if cached is not None and cached[0] == frame.frame_id:
            return cached[1]
        async with self._encoders:
            cached = watched.thumbnail
            if cached is not None and cached[0] == frame.frame_id:
                return cached[1]
            data = await asyncio.to_thread(make_thumbnail, frame)
        watched.thumbnail = (frame.frame_id, data)
        return data

    # Fan-out -----------------------------------------------------------------------

    def _offer(self, message: Message) -> None:
        for viewer in tuple(self._viewers):
            viewer.offer(message)

    def _offer_state(self, session: Session, watched: _Watched) -> None:
        del watched  # summary reads it again: one shape for snapshot and update
        self._revision += 1
        self._offer({"type": "session", "session_id": session.session_id, **self.summary(session)})

    def _announce_frame(self, session_id: str, watched: _Watched) -> None:
        if watched.pending_announce is not None:
            return  # one is scheduled: it will announce the newest frame
        wait = watched.announced_at + FRAME_INTERVAL_S - time.monotonic()
        if wait > 0:
            loop = asyncio.get_running_loop()
            watched.pending_announce = loop.call_later(
                wait, self._announce_now, session_id, watched
            )
            return
        self._announce_now(session_id, watched)

    def _announce_now(self, session_id: str, watched: _Watched) -> None:
        watched.pending_announce = None
        if self._watched.get(session_id) is not watched or watched.frame is None:
            return
        watched.announced_at = time.monotonic()
        watched.frame_seq += 1
        frame = watched.frame
        self._offer(
            {
                "type": "frame",
                "session_id": session_id,
                "frame_seq": watched.frame_seq,
                "frame_id": frame.frame_id,
                "width": frame.size.width,
                "height": frame.size.height,
            }
        )


def make_thumbnail(frame: EncodedFrame) -> bytes:
    """JPEG of the frame within THUMBNAIL_BOX (runs in a worker thread)."""
    image: Image.Image = frame_pixels.decode(frame, "frame").convert("RGB")
    image.thumbnail(THUMBNAIL_BOX)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=THUMBNAIL_QUALITY)
    return out.getvalue()


def _versions(generation: StepGeneration | None) -> list[int]:
    """Every version that sampled a token of the step, in order (any completion)."""
    if generation is None:
        return []
    spans = {span.version for c in generation.completions for span in c.versions}
    return sorted(spans or ({generation.policy_version} if generation.policy_version else set()))


def _result_json(result: ActionResult) -> Message:
    return {
        "action_id": result.action_id,
        "status": result.status.value,
        "error": clip(result.error, TEXT_CHARS),
    }
