"""The client's own recording of a session, in the daemon's recording format
(docs/recording-format.md): frames as sent (delta frames rebuilt into whole images),
the Actions messages as received, the results as sent, and the ending. A refresh
(an Actions message without actions that repeats the last step's number: an
attached desktop's idle heartbeat or GetFrame refresh, a fresh frame after a pause)
is no step, so it is recorded as the daemon records it: only the frame it brings,
another frame of the next step.

It lives where the desktop is, so `holodesk replay` and `holodesk report` work on the
client machine even when the daemon (and its recordings) is remote. Prompts stay on
the daemon: a client never sees them. Writes go to one worker thread in order (each
is fsync'd, milliseconds), so the session's event loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from google.protobuf import json_format
from google.protobuf.message import Message

from holodesk.client.events import Outcome
from holodesk.client.frames import SentFrame
from holodesk.client.whole_frames import whole_frames
from holodesk.data.format import (
    ClientInfo,
    Manifest,
    RecordingError,
    is_refresh,
    make_recording_id,
)
from holodesk.data.writer import RecordingWriter
from holodesk.proto.v1 import action_pb2, agent_pb2

log = logging.getLogger(__name__)

# Outcomes the recording format knows; a client-side error is recorded as a failure.
_OUTCOMES = {
    Outcome.SUCCEEDED: "succeeded",
    Outcome.FAILED: "failed",
    Outcome.CANCELLED: "cancelled",
    Outcome.STEP_LIMIT: "step_limit",
    Outcome.TIME_LIMIT: "time_limit",
    Outcome.ERROR: "failed",
}


def write_whole_frame(writer: RecordingWriter, step: int, frame: SentFrame) -> None:
    """Record a whole (not delta) frame as one `step` is decided on."""
    source = frame.source
    writer.write_frame(
        step,
        frame.frame_id,
        frame.data,
        encoding=frame.encoding.value,
        width=frame.width,
        height=frame.height,
        display_id=frame.display_id,
        source={"x": source.x, "y": source.y, "width": source.width, "height": source.height},
        scale_factor=frame.scale_factor,
    )


def _as_dict(message: Message) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


class SessionTape(Protocol):
    """What a session tells its recording, in the format's order: the start, each
    batch of actions, each observation and frame, then the ending."""

    def begin(self, start: agent_pb2.SessionStart, started: agent_pb2.SessionStarted) -> None: ...

    def frame(self, frame: SentFrame) -> None: ...

    def actions(self, message: agent_pb2.Actions, frame_id: str) -> None: ...

    def observation(self, observation: agent_pb2.Observation) -> None: ...

    def ended(self, message: agent_pb2.SessionEnded, frame_id: str) -> None: ...

    async def finish(
        self, outcome: Outcome, answer: str, reason: str, steps: int
    ) -> Path | None: ...


class NoRecording:
    """The tape of a session that records nothing (no SessionOptions.record_dir)."""

    def begin(self, start: agent_pb2.SessionStart, started: agent_pb2.SessionStarted) -> None:
        pass

    def frame(self, frame: SentFrame) -> None:
        pass

    def actions(self, message: agent_pb2.Actions, frame_id: str) -> None:
        pass

    def observation(self, observation: agent_pb2.Observation) -> None:
        pass

    def ended(self, message: agent_pb2.SessionEnded, frame_id: str) -> None:
        pass

    async def finish(self, outcome: Outcome, answer: str, reason: str, steps: int) -> Path | None:
        return None


class ClientRecorder:
    """One session's recording under `root`; every method is cheap for the caller."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._writer: RecordingWriter | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="holodesk-recording")
        self._pending: list[asyncio.Future[Any]] = []
        self._step = 0
        # The batch being answered is a refresh: its (empty) results are no step's.
        self._refreshing = False
        # The last whole frame recorded: the base of the next delta frame.
        self._last_whole: SentFrame | None = None
        self._broken = False

    @property
    def path(self) -> Path | None:
        return None if self._writer is None else self._writer.path

    def begin(self, start: agent_pb2.SessionStart, started: agent_pb2.SessionStarted) -> None:
        """Creates the recording (once: a resumed session keeps writing the same one)."""
        if self._writer is not None:
            # A resume: the daemon's last step may be one whose actions never arrived.
            # The resume's results (NOT_DELIVERED) and the frames after are that step's,
            # not the last one recorded, whose own results they would replace.
            self._step = max(self._step, int(started.step))
            self._refreshing = False
            return
        now = datetime.now(UTC)
        client = start.client
        manifest = Manifest(
            recording_id=make_recording_id(started.session_id, now),
            session_id=started.session_id,
            task=start.task,
            policy=started.policy,
            principal="client",
            client=ClientInfo(
                os=client.os,
                os_version=client.os_version,
                hostname=client.hostname,
                client_version=client.client_version,
                backend=client.backend,
            ),
            displays=[_as_dict(d) for d in start.displays],
            frame_spec=_as_dict(started.frame_spec),
            sampling=_as_dict(start.sampling) if start.HasField("sampling") else None,
            started_at=now,
        )
        try:
            self._writer = RecordingWriter.create(self._root, manifest)
        except RecordingError as error:
            self._fail(error)

    def frame(self, frame: SentFrame) -> None:
        """A frame just sent; it is what the next step is decided on."""
        whole = frame
        if frame.is_delta:
            if self._last_whole is None or self._last_whole.frame_id != frame.base_frame_id:
                log.warning("recording: frame %s has no base to rebuild it on", frame.frame_id)
                return
            whole = whole_frames([self._last_whole, frame])[1] or frame
        self._last_whole = whole
        step = self._step + 1
        self._submit(lambda writer: write_whole_frame(writer, step, whole))

    def actions(self, message: agent_pb2.Actions, frame_id: str) -> None:
        """A batch received: a step's actions, or a refresh, which is not recorded."""
        self._refreshing = is_refresh(int(message.step), len(message.actions), self._step)
        if self._refreshing:
            return
        self._step = int(message.step)
        raw = message.SerializeToString()
        self._submit(
            lambda writer: writer.write_actions(
                int(message.step), _as_dict(agent_pb2.Actions.FromString(raw)), frame_id=frame_id
            )
        )

    def observation(self, observation: agent_pb2.Observation) -> None:
        """Results of the last step's actions, as sent to the daemon."""
        if self._refreshing:
            self._refreshing = False
            return  # it answers a refresh, not a step
        if self._step == 0:
            return  # the first observation carries only the first frame
        step = self._step
        raws = [r.SerializeToString() for r in observation.results]
        reply = observation.user_reply
        self._submit(
            lambda writer: writer.write_observation(
                step, [_as_dict(action_pb2.ActionResult.FromString(r)) for r in raws], reply
            )
        )

    def ended(self, message: agent_pb2.SessionEnded, frame_id: str) -> None:
        """A last step with nothing to execute (only done or fail) sent no Actions, yet
        it is a step (SessionEnded.steps counts it): written as that step's actions
        event, unsent, as the daemon's recording writes it, with its generation (its
        tokens and versions) when the policy has a model."""
        step = int(message.steps)
        if step <= self._step:
            return
        self._step = step
        body: dict[str, Any] = {"step": step, "sent": False}
        if message.HasField("generation"):
            body["generation"] = _as_dict(message.generation)
        self._submit(lambda writer: writer.write_actions(step, body, frame_id=frame_id))

    async def finish(self, outcome: Outcome, answer: str, reason: str, steps: int) -> Path | None:
        """Writes the ending and waits for every write; the recording's path, if any."""
        name = _OUTCOMES[outcome]
        if outcome is Outcome.ERROR and not reason:
            reason = "client error"
        self._submit(lambda writer: writer.finish(name, answer=answer, reason=reason, steps=steps))
        self._submit(lambda writer: writer.close())
        pending, self._pending = self._pending, []
        await asyncio.gather(*pending, return_exceptions=True)
        self._pool.shutdown(wait=False)
        return None if self._broken else self.path

    def _submit(self, write: Any) -> None:
        writer = self._writer
        if writer is None or self._broken:
            return
        loop = asyncio.get_running_loop()

        def run() -> None:
            if self._broken:
                return
            try:
                write(writer)
            except RecordingError as error:
                self._fail(error)

        self._pending.append(loop.run_in_executor(self._pool, run))
        self._pending = [f for f in self._pending if not f.done()]

    def _fail(self, error: RecordingError) -> None:
        # A full disk must not stop the agent: say so once and stop recording.
        if not self._broken:
            log.warning("recording stopped: %s", error)
        self._broken = True
