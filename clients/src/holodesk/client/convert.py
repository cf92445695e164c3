"""The only module that converts protobuf messages <-> client dataclasses."""

from __future__ import annotations

import platform as stdlib_platform
import socket
from collections.abc import Sequence
from importlib import metadata

from google.protobuf.timestamp_pb2 import Timestamp

from holodesk.client import actions as a
from holodesk.client.events import Ended, Held, Outcome, Started
from holodesk.client.frames import DEFAULT_QUALITY, FramePatch, FrameSpec, SentFrame
from holodesk.client.generation import Completion, Generation, PromptImage, Sampling, VersionSpan
from holodesk.client.locations import Location, LocationStatus, PolicyPinning
from holodesk.platform.base import Backend, DisplayInfo, MouseButton, Region
from holodesk.proto.limits import MAX_ACTIONS, REASON_CHARS, TEXT_CHARS, clip
from holodesk.proto.v1 import action_pb2, agent_pb2, frame_pb2, geometry_pb2
from holodesk.values.encoding import ImageEncoding

_ENCODINGS = {
    ImageEncoding.PNG: frame_pb2.IMAGE_ENCODING_PNG,
    ImageEncoding.JPEG: frame_pb2.IMAGE_ENCODING_JPEG,
    ImageEncoding.WEBP: frame_pb2.IMAGE_ENCODING_WEBP,
}
_ENCODINGS_BACK = {v: k for k, v in _ENCODINGS.items()}
_BUTTONS = {
    MouseButton.LEFT: action_pb2.MOUSE_BUTTON_LEFT,
    MouseButton.RIGHT: action_pb2.MOUSE_BUTTON_RIGHT,
    MouseButton.MIDDLE: action_pb2.MOUSE_BUTTON_MIDDLE,
    MouseButton.BACK: action_pb2.MOUSE_BUTTON_BACK,
    MouseButton.FORWARD: action_pb2.MOUSE_BUTTON_FORWARD,
}
_BUTTONS_BACK = {v: k for k, v in _BUTTONS.items()}
# Actions hold modifiers by their key names: the values' Modifier names them.
_MODIFIERS = {
    a.Modifier.CTRL.value: action_pb2.MODIFIER_CTRL,
    a.Modifier.SHIFT.value: action_pb2.MODIFIER_SHIFT,
    a.Modifier.ALT.value: action_pb2.MODIFIER_ALT,
    a.Modifier.META.value: action_pb2.MODIFIER_META,
}
_MODIFIERS_BACK = {v: k for k, v in _MODIFIERS.items()}
_STATUSES = {
    a.ActionStatus.OK: action_pb2.ACTION_STATUS_OK,
    a.ActionStatus.FAILED: action_pb2.ACTION_STATUS_FAILED,
    a.ActionStatus.REJECTED: action_pb2.ACTION_STATUS_REJECTED,
    a.ActionStatus.SKIPPED: action_pb2.ACTION_STATUS_SKIPPED,
    a.ActionStatus.NOT_DELIVERED: action_pb2.ACTION_STATUS_NOT_DELIVERED,
}
_OUTCOMES = {
    agent_pb2.SESSION_OUTCOME_SUCCEEDED: Outcome.SUCCEEDED,
    agent_pb2.SESSION_OUTCOME_FAILED: Outcome.FAILED,
    agent_pb2.SESSION_OUTCOME_CANCELLED: Outcome.CANCELLED,
    agent_pb2.SESSION_OUTCOME_STEP_LIMIT: Outcome.STEP_LIMIT,
    agent_pb2.SESSION_OUTCOME_TIME_LIMIT: Outcome.TIME_LIMIT,
}


class ConversionError(ValueError):
    """A protobuf value has no meaning for this client (e.g. an unknown enum value)."""


# -- geometry -------------------------------------------------------------------------


def region_to_pb(region: Region) -> geometry_pb2.Rect:
    return geometry_pb2.Rect(x=region.x, y=region.y, width=region.width, height=region.height)


def region_from_pb(rect: geometry_pb2.Rect) -> Region:
    return Region(rect.x, rect.y, rect.width, rect.height)


def display_to_pb(display: DisplayInfo) -> geometry_pb2.Display:
    return geometry_pb2.Display(
        display_id=display.display_id,
        bounds=region_to_pb(display.bounds),
        scale_factor=display.scale_factor,
        primary=display.primary,
        name=display.name,
    )


# -- frames ---------------------------------------------------------------------------


def encoding_to_pb(encoding: ImageEncoding) -> frame_pb2.ImageEncoding.ValueType:
    return _ENCODINGS[encoding]


def encoding_from_pb(value: frame_pb2.ImageEncoding.ValueType) -> ImageEncoding:
    # UNSPECIFIED: PNG, the one encoding every daemon and model pipeline reads losslessly.
    if value == frame_pb2.IMAGE_ENCODING_UNSPECIFIED:
        return ImageEncoding.PNG
    try:
        return _ENCODINGS_BACK[value]
    except KeyError:
        raise ConversionError(f"unknown image encoding {value}") from None


def frame_spec_from_pb(spec: frame_pb2.FrameSpec) -> FrameSpec:
    quality = spec.quality or DEFAULT_QUALITY
    if quality > 100:
        raise ConversionError(f"frame spec quality must be 1-100, got {quality}")
    return FrameSpec(
        max_width=spec.max_width,
        max_height=spec.max_height,
        encoding=encoding_from_pb(spec.encoding),
        quality=quality,
        max_bytes=spec.max_bytes,
        accept_deltas=spec.accept_deltas,
    )


def frame_to_pb(frame: SentFrame) -> frame_pb2.Frame:
    captured_at = Timestamp()
    captured_at.FromDatetime(frame.captured_at)
    out = frame_pb2.Frame(
        frame_id=frame.frame_id,
        size=geometry_pb2.Size(width=frame.width, height=frame.height),
        display_id=frame.display_id,
        source=region_to_pb(frame.source),
        scale_factor=frame.scale_factor,
        captured_at=captured_at,
    )
    if frame.is_delta:  # encoding and data stay empty: the patches are the pixels
        out.base_frame_id = frame.base_frame_id
        out.patches.extend(patch_to_pb(p) for p in frame.patches)
    else:
        out.encoding = encoding_to_pb(frame.encoding)
        out.data = frame.data
    return out


def patch_to_pb(patch: FramePatch) -> frame_pb2.FramePatch:
    return frame_pb2.FramePatch(
        rect=geometry_pb2.Rect(x=patch.x, y=patch.y, width=patch.width, height=patch.height),
        encoding=encoding_to_pb(patch.encoding),
        data=patch.data,
    )


# -- actions --------------------------------------------------------------------------


def _point(p: geometry_pb2.Point) -> a.FramePoint:
    return a.FramePoint(p.x, p.y)


def _button(value: action_pb2.MouseButton.ValueType) -> MouseButton:
    if value == action_pb2.MOUSE_BUTTON_UNSPECIFIED:
        return MouseButton.LEFT
    try:
        return _BUTTONS_BACK[value]
    except KeyError:
        raise ConversionError(f"unknown mouse button {value}") from None


def _modifiers(values: list[action_pb2.Modifier.ValueType]) -> tuple[str, ...]:
    try:
        return tuple(_MODIFIERS_BACK[v] for v in values)
    except KeyError:
        raise ConversionError(f"unknown modifier in {list(values)}") from None


def action_from_pb(action: action_pb2.Action) -> a.Action:
    """Never raises: an action this client cannot read becomes Unsupported (it fails)."""
    ids = {"action_id": action.action_id, "frame_id": action.frame_id}
    try:
        return _action_from_pb(action, ids)
    except ConversionError as error:
        return a.Unsupported(**ids, reason=str(error))


def _action_from_pb(action: action_pb2.Action, ids: dict[str, str]) -> a.Action:
    kind = action.WhichOneof("kind")
    if kind == "click":
        c = action.click
        return a.Click(
            **ids,
            point=_point(c.point),
            button=_button(c.button),
            count=c.count or 1,
            modifiers=_modifiers(list(c.modifiers)),
        )
    if kind == "move":
        return a.Move(**ids, point=_point(action.move.point))
    if kind == "mouse_down":
        d = action.mouse_down
        return a.MouseDown(
            **ids, button=_button(d.button), point=_point(d.point) if d.HasField("point") else None
        )
    if kind == "mouse_up":
        u = action.mouse_up
        return a.MouseUp(
            **ids, button=_button(u.button), point=_point(u.point) if u.HasField("point") else None
        )
    if kind == "drag":
        g = action.drag
        return a.Drag(
            **ids,
            path=tuple(_point(p) for p in g.path),
            button=_button(g.button),
            modifiers=_modifiers(list(g.modifiers)),
            duration_ms=g.duration_ms,
        )
    if kind == "scroll":
        s = action.scroll
        return a.Scroll(**ids, point=_point(s.point), dx=s.dx, dy=s.dy)
    if kind == "type_text":
        return a.TypeText(**ids, text=action.type_text.text)
    if kind == "key_chord":
        return a.KeyChord(**ids, keys=tuple(action.key_chord.keys))
    if kind == "key_down":
        return a.KeyDown(**ids, key=action.key_down.key)
    if kind == "key_up":
        return a.KeyUp(**ids, key=action.key_up.key)
    if kind == "wait":
        return a.Wait(**ids, duration_ms=action.wait.duration_ms)
    if kind == "done":
        return a.Done(**ids, answer=action.done.answer)
    if kind == "fail":
        return a.Fail(**ids, reason=action.fail.reason)
    if kind == "ask_user":
        return a.AskUser(**ids, question=action.ask_user.question)
    if kind == "navigate":
        return a.Navigate(**ids, url=action.navigate.url)
    raise ConversionError("action has no kind this client knows (a newer daemon?)")


def batch_from_pb(batch: agent_pb2.Actions) -> a.ActionBatch:
    if len(batch.actions) > MAX_ACTIONS:
        # Checked before converting any: a hostile daemon may send millions, and no
        # answer fits the contract (Observation.results has the same limit).
        raise ConversionError(
            f"the daemon sent {len(batch.actions):,} actions in one batch; the contract "
            f"allows at most {MAX_ACTIONS}: none of them ran"
        )
    return a.ActionBatch(
        step=batch.step,
        actions=tuple(action_from_pb(x) for x in batch.actions),
        thought=batch.thought,
        generation=(generation_from_pb(batch.generation) if batch.HasField("generation") else None),
    )


# -- sampling and generation ----------------------------------------------------------


def sampling_to_pb(sampling: Sampling) -> agent_pb2.SamplingParams:
    out = agent_pb2.SamplingParams(
        candidates=sampling.candidates,
        logprobs=sampling.logprobs,
        prompt_token_ids=sampling.prompt_token_ids,
    )
    if sampling.temperature is not None:
        out.temperature = sampling.temperature
    if sampling.top_p is not None:
        out.top_p = sampling.top_p
    if sampling.seed is not None:
        out.seed = sampling.seed
    if sampling.max_tokens is not None:
        out.max_tokens = sampling.max_tokens
    return out


def completion_from_pb(completion: agent_pb2.Completion) -> Completion:
    logprobs = tuple(completion.token_logprobs)
    return Completion(
        text=completion.text,
        token_ids=tuple(completion.token_ids),
        token_logprobs=logprobs,
        # The wire's 0.0 means "none" when no token came with a logprob.
        cumulative_logprob=completion.cumulative_logprob if logprobs else None,
        parse_error=_parse_error(completion),
        versions=tuple(_version_span(span) for span in completion.versions),
    )


def _version_span(span: agent_pb2.VersionSpan) -> VersionSpan:
    try:
        return VersionSpan(span.version, span.start, span.end)
    except ValueError as error:
        raise ConversionError(f"completion.versions: {error}") from error


def _parse_error(completion: agent_pb2.Completion) -> str:
    """The wire's `parsed` decides (Completion.parsed is "no parse error"): a parsed
    completion carries no error, an unparsed one always carries a reason."""
    if completion.parsed:
        return ""
    return completion.parse_error or "not parsed (the daemon gave no reason)"


def generation_from_pb(generation: agent_pb2.Generation) -> Generation:
    completions = tuple(completion_from_pb(c) for c in generation.completions)
    if completions and generation.chosen >= len(completions):
        raise ConversionError(
            f"generation.chosen is {generation.chosen}, "
            f"but there are {len(completions)} completions"
        )
    return Generation(
        completions=completions,
        chosen=generation.chosen,
        prompt_tokens=generation.prompt_tokens,
        engine_seconds=generation.engine_seconds,
        policy_version=generation.policy_version,
        policy_label=generation.policy_label,
        prompt_token_ids=tuple(generation.prompt_token_ids),
        images=tuple(
            PromptImage(i.frame_id, i.content_id, i.width, i.height, i.resized)
            for i in generation.images
        ),
    )


def result_to_pb(result: a.ActionResult) -> action_pb2.ActionResult:
    return action_pb2.ActionResult(
        action_id=result.action_id,
        status=_STATUSES[result.status],
        # Cut to the contract's limit: a longer one would make the daemon refuse
        # the whole observation (and end the session) over an error message.
        error=clip(result.error, REASON_CHARS),
        duration_ms=result.duration_ms,
    )


# -- session --------------------------------------------------------------------------


def client_info(backend: Backend) -> agent_pb2.ClientInfo:
    try:
        version = metadata.version("holodesk-client")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return agent_pb2.ClientInfo(
        os=backend.os,
        os_version=stdlib_platform.platform(),
        hostname=socket.gethostname(),
        client_version=version,
        backend=backend.name,
    )


def session_start(
    task: str,
    backend: Backend,
    displays: list[DisplayInfo],
    *,
    encodings: tuple[ImageEncoding, ...],
    max_steps: int,
    policy: str,
    resume_token: str = "",
    sampling: Sampling | None = None,
) -> agent_pb2.RunSessionRequest:
    start = agent_pb2.SessionStart(
        task=task,
        client=client_info(backend),
        displays=[display_to_pb(d) for d in displays],
        encodings=[encoding_to_pb(e) for e in encodings],
        max_steps=max_steps,
        policy=policy,
        resume_token=resume_token,
        hold_notices=True,
    )
    if sampling is not None:
        start.sampling.CopyFrom(sampling_to_pb(sampling))
    return agent_pb2.RunSessionRequest(start=start)


def observation(
    results: list[a.ActionResult], frame: SentFrame | None, user_reply: str = ""
) -> agent_pb2.RunSessionRequest:
    obs = agent_pb2.Observation(
        results=[result_to_pb(r) for r in results], user_reply=clip(user_reply, TEXT_CHARS)
    )
    if frame is not None:
        obs.frame.CopyFrom(frame_to_pb(frame))
    return agent_pb2.RunSessionRequest(observation=obs)


def locate_request(
    frame: SentFrame, descriptions: Sequence[str], policy: str = ""
) -> agent_pb2.LocateRequest:
    return agent_pb2.LocateRequest(
        frame=frame_to_pb(frame), descriptions=list(descriptions), policy=policy
    )


def location_from_pb(location: agent_pb2.Location) -> Location:
    found = location.found and location.HasField("point")
    status = _location_status(location.status, found)
    return Location(
        description=location.description,
        found=found,
        x=location.point.x if found else None,
        y=location.point.y if found else None,
        box=region_from_pb(location.box) if location.HasField("box") else None,
        raw_output=location.raw_output,
        status=status,
    )


def pinning_from_pb(pinning: agent_pb2.PolicyPinning) -> PolicyPinning:
    sampling = None
    if pinning.HasField("sampling"):
        params = pinning.sampling
        sampling = Sampling(
            temperature=params.temperature if params.HasField("temperature") else None,
            top_p=params.top_p if params.HasField("top_p") else None,
            max_tokens=params.max_tokens if params.HasField("max_tokens") else None,
            seed=params.seed if params.HasField("seed") else None,
        )
    return PolicyPinning(
        policy=pinning.policy,
        model=pinning.model,
        engine=pinning.engine,
        dialect=pinning.dialect,
        prompt_hash=pinning.prompt_hash,
        resize_rule=pinning.resize_rule,
        coordinates=pinning.coordinates,
        sampling=sampling,
        policy_version=pinning.policy_version,
        policy_version_label=pinning.policy_version_label,
    )


def _location_status(status: int, found: bool) -> LocationStatus:
    if found:
        return "found"
    if status == agent_pb2.LOCATION_STATUS_ABSENT:
        return "absent"
    if status in (agent_pb2.LOCATION_STATUS_UNPARSEABLE, agent_pb2.LOCATION_STATUS_FOUND):
        # FOUND without a point: nothing usable came back.
        return "unparseable"
    return "unreported"


def reward_request(
    session_id: str, reward: float | None, success: bool | None, note: str = ""
) -> agent_pb2.ReportRewardRequest:
    out = agent_pb2.ReportRewardRequest(session_id=session_id, note=note)
    if reward is not None:
        out.reward = reward
    if success is not None:
        out.success = success
    return out


def cancel(reason: str) -> agent_pb2.RunSessionRequest:
    return agent_pb2.RunSessionRequest(cancel=agent_pb2.CancelSession(reason=reason))


def started_from_pb(started: agent_pb2.SessionStarted) -> Started:
    return Started(
        session_id=started.session_id,
        resume_token=started.resume_token,
        frame_spec=frame_spec_from_pb(started.frame_spec),
        policy=started.policy,
        max_steps=started.max_steps,
        resumed=started.resumed,
        step=started.step,
        pending_action_ids=tuple(started.pending_action_ids),
        recording_id=started.recording_id,
    )


def held_from_pb(held: agent_pb2.SessionHeld) -> Held:
    return Held(held=held.held, taken_over=held.taken_over, note=held.note)


def ended_from_pb(ended: agent_pb2.SessionEnded) -> Ended:
    try:
        outcome = _OUTCOMES[ended.outcome]
    except KeyError:
        raise ConversionError(f"session ended with unknown outcome {ended.outcome}") from None
    generation = generation_from_pb(ended.generation) if ended.HasField("generation") else None
    return Ended(
        outcome=outcome,
        answer=ended.answer,
        reason=ended.reason,
        steps=ended.steps,
        generation=generation,
    )
