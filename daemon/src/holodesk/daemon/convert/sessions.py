"""A session's messages: SessionStart -> SessionRequest (displays, client,
encodings, sampling), and SessionStarted, SessionEnded and SessionInfo out; the
client and displays a session was started with go back out as they came in
(ComputerService's DesktopInfo).

Apart because these are the session lifecycle's own, the only conversions that
read a Session; the pieces they carry (frames, sampling, a generation) come from
their own modules.
"""

from __future__ import annotations

import math
from datetime import datetime

from google.protobuf import timestamp_pb2

from holodesk.daemon.convert.checks import check_limits
from holodesk.daemon.convert.frames import encoding_from_pb, frame_spec_to_pb
from holodesk.daemon.convert.generation import generation_to_pb, sampling_from_pb
from holodesk.daemon.convert.geometry import rect_from_pb, rect_to_pb
from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.frames import FrameSpec
from holodesk.daemon.generation import StepGeneration
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.session.values import (
    Display,
    Ending,
    SessionOutcome,
    SessionRequest,
    SessionState,
)
from holodesk.data.format import ClientInfo
from holodesk.proto import limits
from holodesk.proto.limits import clip
from holodesk.proto.v1 import agent_pb2, control_pb2, geometry_pb2

_OUTCOMES_PB = {
    SessionOutcome.SUCCEEDED: agent_pb2.SESSION_OUTCOME_SUCCEEDED,
    SessionOutcome.FAILED: agent_pb2.SESSION_OUTCOME_FAILED,
    SessionOutcome.CANCELLED: agent_pb2.SESSION_OUTCOME_CANCELLED,
    SessionOutcome.STEP_LIMIT: agent_pb2.SESSION_OUTCOME_STEP_LIMIT,
    SessionOutcome.TIME_LIMIT: agent_pb2.SESSION_OUTCOME_TIME_LIMIT,
}

_STATES_PB = {
    SessionState.WAITING_FOR_CLIENT: control_pb2.SESSION_STATE_WAITING_FOR_CLIENT,
    SessionState.THINKING: control_pb2.SESSION_STATE_THINKING,
    # An attached desktop waiting for its ComputerService caller: the daemon decides
    # nothing, it waits on a client of its own (the contract has no closer state).
    SessionState.WAITING_FOR_CALLER: control_pb2.SESSION_STATE_WAITING_FOR_CLIENT,
    SessionState.PAUSED: control_pb2.SESSION_STATE_PAUSED,
    SessionState.DETACHED: control_pb2.SESSION_STATE_DETACHED,
    SessionState.ENDED: control_pb2.SESSION_STATE_ENDED,
}


def observation_from_pb(observation: agent_pb2.Observation, field: str) -> agent_pb2.Observation:
    """The observation, held to its limits (results, user_reply, frame ids);
    its results and frame are converted where they are used (session_runner)."""
    check_limits(observation, field)
    return observation


def display_from_pb(display: geometry_pb2.Display, field: str) -> Display:
    scale = display.scale_factor if display.scale_factor != 0 else 1.0
    if not math.isfinite(scale) or scale <= 0:
        raise InvalidArgument(f"{field}.scale_factor", f"must be positive, got {scale}")
    return Display(
        display_id=display.display_id,
        bounds=rect_from_pb(display.bounds),
        scale_factor=scale,
        primary=display.primary,
        name=display.name,
    )


def display_to_pb(display: Display) -> geometry_pb2.Display:
    return geometry_pb2.Display(
        display_id=display.display_id,
        bounds=rect_to_pb(display.bounds),
        scale_factor=display.scale_factor,
        primary=display.primary,
        name=display.name,
    )


def session_request_from_pb(start: agent_pb2.SessionStart, field: str = "start") -> SessionRequest:
    # First: a million displays cost one len() here, not a million conversions.
    check_limits(start, field)
    displays = tuple(
        display_from_pb(d, f"{field}.displays[{i}]") for i, d in enumerate(start.displays)
    )
    ids = [d.display_id for d in displays]
    if len(set(ids)) != len(ids):
        raise InvalidArgument(f"{field}.displays", "display ids must be unique")
    return SessionRequest(
        task=start.task,
        client=client_info_from_pb(start.client),
        displays=displays,
        encodings=tuple(
            encoding_from_pb(e, f"{field}.encodings[{i}]") for i, e in enumerate(start.encodings)
        ),
        max_steps=start.max_steps,
        resume_token=start.resume_token,
        policy=start.policy,
        sampling=(
            sampling_from_pb(start.sampling, f"{field}.sampling")
            if start.HasField("sampling")
            else None
        ),
    )


def client_info_from_pb(client: agent_pb2.ClientInfo) -> ClientInfo:
    """The one place the daemon builds a ClientInfo: the session keeps it, and its
    recording's manifest takes it as it is (recorder.py)."""
    return ClientInfo(
        os=client.os,
        os_version=client.os_version,
        hostname=client.hostname,
        client_version=client.client_version,
        backend=client.backend,
    )


def client_info_to_pb(client: ClientInfo) -> agent_pb2.ClientInfo:
    """What a session's client said of itself, sent back as it came (client_info_from_pb
    in reverse)."""
    return agent_pb2.ClientInfo(
        os=client.os,
        os_version=client.os_version,
        hostname=client.hostname,
        client_version=client.client_version,
        backend=client.backend,
    )


def session_started_to_pb(
    session: Session, spec: FrameSpec, *, resumed: bool
) -> agent_pb2.SessionStarted:
    return agent_pb2.SessionStarted(
        session_id=session.session_id,
        resume_token=session.resume_token,
        frame_spec=frame_spec_to_pb(spec),
        policy=session.policy_name,
        max_steps=session.max_steps,
        resumed=resumed,
        step=session.step if resumed else 0,
        pending_action_ids=list(session.pending_ids) if resumed else [],
        recording_id=session.recording_id,
    )


def ending_to_pb(
    ending: Ending, steps: int, generation: StepGeneration | None = None
) -> agent_pb2.SessionEnded:
    out = agent_pb2.SessionEnded(
        outcome=_OUTCOMES_PB[ending.outcome],
        answer=clip(ending.answer, limits.TEXT_CHARS),
        reason=clip(ending.reason, limits.REASON_CHARS),
        steps=steps,
    )
    if generation is not None:
        out.generation.CopyFrom(generation_to_pb(generation))
    return out


def held_to_pb(held: bool, *, taken_over: bool, note: str = "") -> agent_pb2.SessionHeld:
    return agent_pb2.SessionHeld(
        held=held, taken_over=taken_over, note=clip(note, limits.TEXT_CHARS)
    )


def timestamp_to_pb(moment: datetime) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(moment)
    return stamp


def session_info_to_pb(session: Session) -> control_pb2.SessionInfo:
    return control_pb2.SessionInfo(
        session_id=session.session_id,
        # A preview: the list of every session must fit one message.
        task=clip(session.task, limits.TASK_PREVIEW_CHARS),
        state=_STATES_PB[session.state],
        step=session.step,
        max_steps=session.max_steps,
        policy=session.policy_name,
        client_hostname=session.request.client.hostname,
        client_os=session.request.client.os,
        started_at=timestamp_to_pb(session.started_at),
        principal=session.principal,
    )
