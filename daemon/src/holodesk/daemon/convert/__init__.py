"""The only place where the daemon converts protobuf messages <-> internal values.

Inbound conversions validate shape and name the offending field in an
InvalidArgument (e.g. "observation.frame.size: width and height must be set").
Each first holds its message to the contract's length limits
(holodesk.proto.limits, `check_limits`), before any value is converted, logged or
echoed in an error; deeper checks (decodability, frame limits, protocol state)
happen elsewhere. Outbound human-readable text is cut to its limit (`clip`), so
the daemon never sends more than the contract promises.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime

from google.protobuf import timestamp_pb2
from google.protobuf.message import Message

from holodesk.daemon import actions as act
from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.frames import EncodedFrame, FramePatch, FrameSpec, ImageEncoding
from holodesk.daemon.generation import (
    MAX_CANDIDATES,
    MAX_SAMPLED_TOKENS,
    Sampling,
    StepGeneration,
)
from holodesk.daemon.geometry import Box, Point, Rect, Size
from holodesk.daemon.policies.base import Location
from holodesk.daemon.session.frame_deltas import FrameDelta
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
from holodesk.proto.v1 import (
    action_pb2,
    agent_pb2,
    control_pb2,
    frame_pb2,
    geometry_pb2,
)

_ENCODINGS: dict[frame_pb2.ImageEncoding.ValueType, ImageEncoding] = {
    frame_pb2.IMAGE_ENCODING_PNG: ImageEncoding.PNG,
    frame_pb2.IMAGE_ENCODING_JPEG: ImageEncoding.JPEG,
    frame_pb2.IMAGE_ENCODING_WEBP: ImageEncoding.WEBP,
}
_ENCODINGS_PB = {v: k for k, v in _ENCODINGS.items()}

_BUTTONS_PB = {
    act.MouseButton.LEFT: action_pb2.MOUSE_BUTTON_LEFT,
    act.MouseButton.RIGHT: action_pb2.MOUSE_BUTTON_RIGHT,
    act.MouseButton.MIDDLE: action_pb2.MOUSE_BUTTON_MIDDLE,
    act.MouseButton.BACK: action_pb2.MOUSE_BUTTON_BACK,
    act.MouseButton.FORWARD: action_pb2.MOUSE_BUTTON_FORWARD,
}
_MODIFIERS_PB = {
    act.Modifier.CTRL: action_pb2.MODIFIER_CTRL,
    act.Modifier.SHIFT: action_pb2.MODIFIER_SHIFT,
    act.Modifier.ALT: action_pb2.MODIFIER_ALT,
    act.Modifier.META: action_pb2.MODIFIER_META,
}
_STATUSES = {
    action_pb2.ACTION_STATUS_OK: act.ActionStatus.OK,
    action_pb2.ACTION_STATUS_FAILED: act.ActionStatus.FAILED,
    action_pb2.ACTION_STATUS_REJECTED: act.ActionStatus.REJECTED,
    action_pb2.ACTION_STATUS_SKIPPED: act.ActionStatus.SKIPPED,
    action_pb2.ACTION_STATUS_NOT_DELIVERED: act.ActionStatus.NOT_DELIVERED,
}
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
    SessionState.PAUSED: control_pb2.SESSION_STATE_PAUSED,
    SessionState.DETACHED: control_pb2.SESSION_STATE_DETACHED,
    SessionState.ENDED: control_pb2.SESSION_STATE_ENDED,
}


# Inbound ---------------------------------------------------------------------------


def check_limits(message: Message, field: str = "") -> None:
    """INVALID_ARGUMENT naming the first field of `message` over its contract limit.

    The description gives the limit and the size, never the value: an error (and
    the log line it makes) stays small whatever was sent.
    """
    violation = limits.first_violation(message, field)
    if violation is not None:
        raise InvalidArgument(violation.field, violation.description)


def observation_from_pb(observation: agent_pb2.Observation, field: str) -> agent_pb2.Observation:
    """The observation, held to its limits (results, user_reply, frame ids);
    its results and frame are converted where they are used (session_runner)."""
    check_limits(observation, field)
    return observation


def encoding_from_pb(value: int, field: str) -> ImageEncoding:
    try:
        return _ENCODINGS[frame_pb2.ImageEncoding.ValueType(value)]
    except KeyError:
        raise InvalidArgument(field, f"unsupported image encoding {value}") from None


def rect_from_pb(rect: geometry_pb2.Rect) -> Rect:
    return Rect(rect.x, rect.y, rect.width, rect.height)


def frame_from_pb(frame: frame_pb2.Frame, field: str) -> EncodedFrame:
    """A full frame; delta fields are refused (see frame_delta_from_pb)."""
    check_limits(frame, field)
    if frame.base_frame_id:
        raise InvalidArgument(
            f"{field}.base_frame_id",
            "delta frames are only accepted in a session's observations, when its "
            "FrameSpec.accept_deltas is set; send a full frame here",
        )
    if frame.patches:
        raise InvalidArgument(
            f"{field}.patches", "patches need base_frame_id (the frame they are painted on)"
        )
    scale = _frame_scale(frame, field)
    return EncodedFrame(
        frame_id=frame.frame_id,
        size=Size(frame.size.width, frame.size.height),
        encoding=encoding_from_pb(frame.encoding, f"{field}.encoding"),
        data=frame.data,
        display_id=frame.display_id,
        source=rect_from_pb(frame.source) if frame.HasField("source") else None,
        scale_factor=scale,
    )


def _frame_scale(frame: frame_pb2.Frame, field: str) -> float:
    """Checks the size is set too; returns the scale factor (unset: 1.0)."""
    if not frame.HasField("size") or frame.size.width == 0 or frame.size.height == 0:
        raise InvalidArgument(f"{field}.size", "width and height must be set")
    scale = frame.scale_factor if frame.scale_factor != 0 else 1.0
    if not math.isfinite(scale) or scale <= 0:
        raise InvalidArgument(f"{field}.scale_factor", f"must be positive, got {scale}")
    return scale


def frame_delta_from_pb(frame: frame_pb2.Frame, field: str) -> FrameDelta:
    """A delta frame (base_frame_id set): its image lives in the patches alone."""
    check_limits(frame, field)
    scale = _frame_scale(frame, field)
    if frame.encoding != frame_pb2.IMAGE_ENCODING_UNSPECIFIED:
        raise InvalidArgument(
            f"{field}.encoding",
            "must be unset in a delta frame (base_frame_id is set): each patch has its own",
        )
    if frame.data:
        raise InvalidArgument(
            f"{field}.data",
            "must be empty in a delta frame (base_frame_id is set): the patches carry the pixels",
        )
    patches = []
    for index, patch in enumerate(frame.patches):
        where = f"{field}.patches[{index}]"
        if not patch.HasField("rect"):
            raise InvalidArgument(f"{where}.rect", "must be set")
        patches.append(
            FramePatch(
                rect=rect_from_pb(patch.rect),
                encoding=encoding_from_pb(patch.encoding, f"{where}.encoding"),
                data=patch.data,
            )
        )
    return FrameDelta(
        frame_id=frame.frame_id,
        size=Size(frame.size.width, frame.size.height),
        base_frame_id=frame.base_frame_id,
        patches=tuple(patches),
        display_id=frame.display_id,
        source=rect_from_pb(frame.source) if frame.HasField("source") else None,
        scale_factor=scale,
    )


def result_from_pb(result: action_pb2.ActionResult, field: str) -> act.ActionResult:
    if not result.action_id:
        raise InvalidArgument(f"{field}.action_id", "must be set")
    status = _STATUSES.get(result.status)
    if status is None:
        raise InvalidArgument(
            f"{field}.status", "must be OK, FAILED, REJECTED, SKIPPED or NOT_DELIVERED"
        )
    return act.ActionResult(result.action_id, status, result.error, result.duration_ms)


def results_from_pb(
    results: Iterable[action_pb2.ActionResult], field: str
) -> tuple[act.ActionResult, ...]:
    return tuple(result_from_pb(r, f"{field}[{i}]") for i, r in enumerate(results))


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


def sampling_from_pb(params: agent_pb2.SamplingParams, field: str) -> Sampling:
    temperature = params.temperature if params.HasField("temperature") else None
    if temperature is not None and not (math.isfinite(temperature) and temperature >= 0):
        raise InvalidArgument(f"{field}.temperature", f"must be 0 or more, got {temperature}")
    top_p = params.top_p if params.HasField("top_p") else None
    if top_p is not None and not (math.isfinite(top_p) and 0 < top_p <= 1):
        raise InvalidArgument(f"{field}.top_p", f"must be above 0 and at most 1, got {top_p}")
    candidates = params.candidates or 1
    if candidates > MAX_CANDIDATES:
        raise InvalidArgument(
            f"{field}.candidates", f"at most {MAX_CANDIDATES} per step, got {candidates}"
        )
    if candidates > 1 and temperature == 0:
        raise InvalidArgument(
            f"{field}.candidates",
            f"{candidates} candidates need a temperature above 0 (greedy ones are all the same)",
        )
    max_tokens = params.max_tokens if params.HasField("max_tokens") else None
    if max_tokens is not None and not 1 <= max_tokens <= MAX_SAMPLED_TOKENS:
        raise InvalidArgument(
            f"{field}.max_tokens", f"must be 1 to {MAX_SAMPLED_TOKENS}, got {max_tokens}"
        )
    return Sampling(
        temperature=temperature,
        top_p=top_p,
        seed=params.seed if params.HasField("seed") else None,
        candidates=candidates,
        logprobs=params.logprobs,
        max_tokens=max_tokens,
    )


# Outbound --------------------------------------------------------------------------


def point_to_pb(point: Point) -> geometry_pb2.Point:
    return geometry_pb2.Point(x=point.x, y=point.y)


def rect_to_pb(rect: Rect) -> geometry_pb2.Rect:
    return geometry_pb2.Rect(x=rect.x, y=rect.y, width=rect.width, height=rect.height)


def frame_spec_to_pb(spec: FrameSpec) -> frame_pb2.FrameSpec:
    return frame_pb2.FrameSpec(
        max_width=spec.max_width,
        max_height=spec.max_height,
        encoding=_ENCODINGS_PB[spec.encoding],
        quality=spec.quality,
        max_bytes=spec.max_bytes,
        accept_deltas=spec.accept_deltas,
    )


def _point_or_none(point: Point | None) -> geometry_pb2.Point | None:
    return None if point is None else point_to_pb(point)


def action_to_pb(action: act.Action) -> action_pb2.Action:
    out = action_pb2.Action(action_id=action.action_id, frame_id=action.frame_id)
    match action.kind:
        case act.Click(point=p, button=b, count=c, modifiers=m):
            out.click.CopyFrom(
                action_pb2.ClickAction(
                    point=point_to_pb(p),
                    button=_BUTTONS_PB[b],
                    count=c,
                    modifiers=[_MODIFIERS_PB[x] for x in m],
                )
            )
        case act.Move(point=p):
            out.move.CopyFrom(action_pb2.MoveAction(point=point_to_pb(p)))
        case act.MouseDown(button=b, point=p):
            out.mouse_down.CopyFrom(
                action_pb2.MouseDownAction(button=_BUTTONS_PB[b], point=_point_or_none(p))
            )
        case act.MouseUp(button=b, point=p):
            out.mouse_up.CopyFrom(
                action_pb2.MouseUpAction(button=_BUTTONS_PB[b], point=_point_or_none(p))
            )
        case act.Drag(path=path, button=b, modifiers=m, duration_ms=ms):
            out.drag.CopyFrom(
                action_pb2.DragAction(
                    path=[point_to_pb(p) for p in path],
                    button=_BUTTONS_PB[b],
                    modifiers=[_MODIFIERS_PB[x] for x in m],
                    duration_ms=ms,
                )
            )
        case act.Scroll(point=p, dx=dx, dy=dy):
            out.scroll.CopyFrom(action_pb2.ScrollAction(point=point_to_pb(p), dx=dx, dy=dy))
        case act.TypeText(text=t):
            out.type_text.CopyFrom(action_pb2.TypeTextAction(text=t))
        case act.KeyChord(keys=keys):
            out.key_chord.CopyFrom(action_pb2.KeyChordAction(keys=list(keys)))
        case act.KeyDown(key=k):
            out.key_down.CopyFrom(action_pb2.KeyDownAction(key=k))
        case act.KeyUp(key=k):
            out.key_up.CopyFrom(action_pb2.KeyUpAction(key=k))
        case act.Wait(duration_ms=ms):
            out.wait.CopyFrom(action_pb2.WaitAction(duration_ms=ms))
        case act.Done(answer=a):
            out.done.CopyFrom(action_pb2.DoneAction(answer=a))
        case act.Fail(reason=r):
            out.fail.CopyFrom(action_pb2.FailAction(reason=r))
        case act.AskUser(question=q):
            out.ask_user.CopyFrom(action_pb2.AskUserAction(question=clip(q, limits.TEXT_CHARS)))
        case act.Navigate(url=u):
            out.navigate.CopyFrom(action_pb2.NavigateAction(url=u))
    return out


def actions_violation(message: agent_pb2.Actions) -> limits.Violation | None:
    """The first action of a batch whose payload (text to type, URL, keys, path) is
    over its contract limit. Such text cannot be cut without changing what the
    action does, so the session runner refuses to send it at all."""
    for index, action in enumerate(message.actions):
        violation = limits.first_violation(action, f"actions[{index}]")
        if violation is not None:
            return violation
    return None


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


def actions_to_pb(
    step: int,
    actions: tuple[act.Action, ...],
    thought: str,
    *,
    generation: StepGeneration | None = None,
) -> agent_pb2.Actions:
    out = agent_pb2.Actions(
        step=step,
        actions=[action_to_pb(a) for a in actions],
        thought=clip(thought, limits.TEXT_CHARS),
    )
    if generation is not None:
        out.generation.CopyFrom(generation_to_pb(generation))
    return out


def generation_to_pb(generation: StepGeneration) -> agent_pb2.Generation:
    # Generation.chosen is a plain index. A step none of whose candidates parsed ends
    # the session as FAILED; its chosen 0 then names a completion with parsed=false.
    return agent_pb2.Generation(
        completions=[
            agent_pb2.Completion(
                text=clip(c.text, limits.COMPLETION_CHARS),
                token_ids=list(c.token_ids),
                token_logprobs=list(c.token_logprobs),
                cumulative_logprob=c.cumulative_logprob or 0.0,
                parsed=c.parsed,
                parse_error=clip(c.parse_error, limits.REASON_CHARS),
            )
            for c in generation.completions
        ],
        chosen=generation.chosen or 0,
        prompt_tokens=generation.prompt_tokens,
        engine_seconds=generation.engine_seconds,
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


def location_to_pb(location: Location) -> agent_pb2.Location:
    out = agent_pb2.Location(
        description=clip(location.description, limits.REASON_CHARS),
        found=location.found,
        raw_output=clip(location.raw_output, limits.COMPLETION_CHARS),
    )
    if location.point is not None:
        out.point.CopyFrom(point_to_pb(location.point))
    if location.box is not None:
        out.box.CopyFrom(rect_to_pb(box_outward(location.box)))
    return out


def box_outward(box: Box) -> Rect:
    """The smallest whole-pixel Rect that covers a continuous box (edges rounded outward)."""
    left, top = math.floor(box.left), math.floor(box.top)
    return Rect(left, top, math.ceil(box.right) - left, math.ceil(box.bottom) - top)
