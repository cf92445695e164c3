"""Session recordings on the daemon side (docs/recording-format.md; issue 7).

The runner opens a recording (`open`, before SessionStarted: it may refuse the
session); from there the recorder is an observer of the session's event stream
(session_events.py, registered in SessionRegistry.observers): FrameTaken (the full
image the policy sees, rebuilt from a delta frame where the client sent one),
ActionsMade (the Actions message as made, the prompt), ObservationRead (results,
user reply); the registry's listener `session_left` writes the end. What each
write holds (the manifest, the JSON of a message, the prompt, a flattened frame) is
recording_content.py's; this module is when and where it is written.

Blocking file I/O (every event is fsync'd) never runs on the event loop: each recording
has an ordered queue drained by one task that hands the writes to a small thread pool
of its own, so the order of events is kept and other sessions never wait on a disk. A
failing disk stops that recording (logged once), never its session.

Sessions that left the registry are remembered (principal, recording) in a bounded map
with a TTL (ended_sessions.py), so AgentService.ReportReward can reach them after they ended.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from holodesk.daemon.errors import FailedPrecondition
from holodesk.daemon.frames import EncodedFrame, FrameSpec
from holodesk.daemon.policies.base import Decision, Policy
from holodesk.daemon.session.ended_sessions import ENDED_CAPACITY, ENDED_TTL_S, Ended, EndedSessions
from holodesk.daemon.session.recording_content import (
    manifest_for,
    prompt_dicts,
    to_dict,
    write_frame,
)
from holodesk.daemon.session.session_events import (
    ActionsMade,
    FrameTaken,
    ObservationRead,
    SessionEvent,
)
from holodesk.daemon.session.sessions import Session
from holodesk.data.format import RecordingError
from holodesk.data.writer import RecordingWriter, prepare_root
from holodesk.proto.v1 import action_pb2, agent_pb2

__all__ = [
    "DRAIN_TIMEOUT_S",
    "ENDED_CAPACITY",
    "ENDED_TTL_S",
    "IO_THREADS",
    "Recorder",
    "RewardTarget",
    "default_record_dir",
    "prompt_dicts",
    "to_dict",
]

log = logging.getLogger(__name__)

# Threads doing recordings' file I/O (fsync-bound; shared by every recording).
IO_THREADS = 4
# How long the daemon's stop waits for recordings to reach the disk.
DRAIN_TIMEOUT_S = 30.0


def default_record_dir() -> Path:
    """The per-user data directory's recordings folder (e.g. ~/.local/share/holodesk/recordings)."""
    return Path(platformdirs.user_data_dir("holodesk")) / "recordings"


# A write for the recording's thread, and where to report its end (None: nowhere).
_Job = tuple[Callable[[], object], "asyncio.Future[None] | None"]


@dataclass
class _Track:
    """One recorded session: its writer and the queue of writes not done yet."""

    writer: RecordingWriter
    queue: asyncio.Queue[_Job | None] = field(default_factory=asyncio.Queue)
    worker: asyncio.Task[None] | None = None
    failed: bool = False


@dataclass(frozen=True)
class RewardTarget:
    """A session ReportReward may address: who ran it, and whether it is recorded."""

    principal: str
    recorded: bool


class Recorder:
    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        default_on: bool = False,
        ended_capacity: int = ENDED_CAPACITY,
        ended_ttl_s: float = ENDED_TTL_S,
    ) -> None:
        self.root = Path(root) if root else default_record_dir()
        self.default_on = default_on
        self._live: dict[str, _Track] = {}
        self._ended: EndedSessions[_Track] = EndedSessions(ended_capacity, ended_ttl_s)
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=IO_THREADS, thread_name_prefix="recorder"
        )

    def prepare(self) -> None:
        """Make the root now (the daemon's start) when every session records by default,
        so a bad --record-dir fails at once instead of at the first session."""
        if self.default_on:
            try:
                prepare_root(self.root)  # 0700 when new: recordings are private
            except OSError as exc:
                raise OSError(f"--record-dir {self.root}: {exc.strerror or exc}") from exc

    def wants(self, mode: int) -> bool:
        """Whether a session with SessionStart.recording = mode is recorded."""
        if mode == agent_pb2.RECORDING_MODE_ON:
            return True
        if mode == agent_pb2.RECORDING_MODE_OFF:
            return False
        return self.default_on

    # Events of a session -----------------------------------------------------------

    async def open(
        self, session: Session, start: agent_pb2.SessionStart, policy: Policy, spec: FrameSpec
    ) -> None:
        """Start recording `session` when its SessionStart (or the default) asks for it;
        sets session.recording_id. A recording asked for explicitly that cannot be
        created fails the session (FAILED_PRECONDITION); by default it is only logged."""
        if not self.wants(start.recording) or session.session_id in self._live:
            return
        manifest = manifest_for(session, start, policy, spec)
        try:
            writer = await self._run(RecordingWriter.create, self.root, manifest)
        except RecordingError as exc:
            if start.recording == agent_pb2.RECORDING_MODE_ON:
                raise FailedPrecondition("recording", f"cannot record this session: {exc}") from exc
            log.error("session %s is not recorded: %s", session.session_id, exc)
            return
        track = _Track(writer)
        track.worker = asyncio.create_task(self._drain(track), name=f"record-{session.session_id}")
        self._live[session.session_id] = track
        session.recording_id = writer.recording_id
        log.info("session %s recorded in %s", session.session_id, writer.path)

    def observe(self, session: Session, event: SessionEvent) -> None:
        """SessionRegistry observer: what the recording keeps of a session's events
        (nothing for a session that is not recorded, nor for the live view's own)."""
        if isinstance(event, FrameTaken):
            self.frame(session, event.frame)
        elif isinstance(event, ActionsMade):
            self.actions(
                session,
                event.message,
                event.decision,
                frames=event.frames,
                policy_seconds=event.policy_seconds,
                sent=event.sent,
            )
        elif isinstance(event, ObservationRead):
            self.observation(session, event.results, event.user_reply)

    def frame(self, session: Session, frame: EncodedFrame) -> None:
        """The image the policy will see for the session's next step."""
        track = self._live.get(session.session_id)
        if track is None:
            return
        step = session.step + 1  # now: the job runs later, after the step is counted
        track.queue.put_nowait((lambda: write_frame(track.writer, step, frame), None))

    def actions(
        self,
        session: Session,
        message: agent_pb2.Actions,
        decision: Decision,
        *,
        frames: Sequence[EncodedFrame],
        policy_seconds: float,
        sent: bool = True,
    ) -> None:
        """One step's Actions message; `frames` is the window the policy decided from.
        `sent` is False for a decision that ended the session without actions (only a
        done or fail): its message is recorded for its generation, and never sent."""
        track = self._live.get(session.session_id)
        if track is None:
            return
        # Bytes now (microseconds), JSON in the writer's thread: MessageToDict of a step
        # with token log-probabilities takes milliseconds, too long for the event loop.
        raw = message.SerializeToString()
        generation = decision.generation
        prompt = None if generation is None else prompt_dicts(generation.messages, frames)
        frame_id = frames[-1].frame_id if frames else ""
        step = int(message.step)

        def write() -> None:
            body = to_dict(agent_pb2.Actions.FromString(raw))
            if not sent:
                body["sent"] = False
            track.writer.write_actions(
                step, body, frame_id=frame_id, prompt=prompt, policy_seconds=policy_seconds
            )

        track.queue.put_nowait((write, None))

    def observation(
        self,
        session: Session,
        results: Sequence[action_pb2.ActionResult],
        user_reply: str,
    ) -> None:
        """Results of the session's last step (session.step) as the client reported them."""
        track = self._live.get(session.session_id)
        if track is None or session.step == 0:
            return
        step = session.step
        raws = [result.SerializeToString() for result in results]

        def write() -> None:
            items = [to_dict(action_pb2.ActionResult.FromString(raw)) for raw in raws]
            track.writer.write_observation(step, items, user_reply)

        track.queue.put_nowait((write, None))

    def session_left(self, session: Session) -> None:
        """SessionRegistry listener: the session ended (or was dropped); write its end."""
        track = self._live.pop(session.session_id, None)
        if track is not None:
            ending = session.ended
            if ending is not None:
                steps = session.step
                track.queue.put_nowait(
                    (
                        lambda: track.writer.finish(
                            ending.outcome.value,
                            answer=ending.answer,
                            reason=ending.reason,
                            steps=steps,
                        ),
                        None,
                    )
                )
            else:  # not expected: the registry removes ended sessions only
                track.queue.put_nowait((track.writer.close, None))
            track.queue.put_nowait(None)
        self._ended.remember(session.session_id, Ended(session.principal, track, time.monotonic()))

    # Rewards ------------------------------------------------------------------------

    def ended_target(self, session_id: str) -> RewardTarget | None:
        """An ended session still remembered, or None."""
        self._ended.expire()
        ended = self._ended.get(session_id)
        if ended is None:
            return None
        return RewardTarget(ended.principal, ended.track is not None and not ended.track.failed)

    async def add_reward(
        self, session_id: str, reward: float | None, success: bool | None, note: str
    ) -> bool:
        """Write a reward event to the session's recording; False when not recorded."""
        track = self._live.get(session_id)
        if track is not None and not track.failed:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            # In the session's queue: after the events already waiting, before later ones.
            track.queue.put_nowait((lambda: track.writer.add_reward(reward, success, note), done))
            try:
                await done
            except RecordingError as exc:
                log.error("reward for session %s not recorded: %s", session_id, exc)
                return False
            return True
        ended = self._ended.get(session_id)
        if ended is None or ended.track is None or ended.track.failed:
            return False
        writer = ended.track.writer
        # Its queue may still hold the end: wait for it, then write directly.
        if ended.track.worker is not None:
            await asyncio.shield(ended.track.worker)
        if ended.track.failed:
            return False
        try:
            await self._run(writer.add_reward, reward, success, note)
        except RecordingError as exc:
            log.error("reward for session %s not recorded: %s", session_id, exc)
            return False
        return True

    # Lifecycle ----------------------------------------------------------------------

    async def close(self, timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        """Flush every recording (after the registry is empty) and stop the threads."""
        for track in self._live.values():
            # Sessions that never left the registry: keep their events, no end.
            track.queue.put_nowait((track.writer.close, None))
            track.queue.put_nowait(None)
        self._live.clear()
        workers = [
            e.track.worker
            for e in self._ended.values()
            if e.track is not None and e.track.worker is not None and not e.track.worker.done()
        ]
        if workers:
            _, pending = await asyncio.wait(workers, timeout=timeout_s)
            if pending:
                log.error("%d recording(s) did not reach the disk in %g s", len(pending), timeout_s)
        self._pool.shutdown(wait=False, cancel_futures=False)

    async def _drain(self, track: _Track) -> None:
        while (item := await track.queue.get()) is not None:
            job, done = item
            if track.failed:
                if done is not None and not done.done():
                    done.set_exception(RecordingError(f"recording {track.writer.path} stopped"))
                continue
            try:
                await self._run(job)
            except Exception as exc:
                # A half-written event must not be followed by more: stop this recording.
                track.failed = True
                log.error("recording %s stopped: %s", track.writer.path, exc, exc_info=exc)
                await self._run(_quietly(track.writer.close))
                if done is not None and not done.done():
                    done.set_exception(_as_recording_error(exc))
                continue
            if done is not None and not done.done():
                done.set_result(None)

    async def _run(self, function: Callable[..., Any], *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, lambda: function(*args))


def _quietly(function: Callable[[], object]) -> Callable[[], None]:
    """The function, its failure logged (with its traceback, at debug) and not raised:
    closing a recording that already failed must not hide the failure that stopped it."""

    def run() -> None:
        try:
            function()
        except Exception as exc:
            log.debug("ignored while stopping a recording: %s", exc, exc_info=exc)

    return run


def _as_recording_error(exc: Exception) -> RecordingError:
    """What a waiter on the recording hears: a RecordingError whose cause is the
    failure itself (a disk's OSError, an encoder's error), not only its text."""
    if isinstance(exc, RecordingError):
        return exc
    error = RecordingError(str(exc))
    error.__cause__ = exc
    return error
