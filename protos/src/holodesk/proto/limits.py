"""The length limit of every string and repeated field of holodesk.v1: one table,
imported by the daemon (which refuses longer inbound values with INVALID_ARGUMENT
naming the field, and never sends longer outbound text) and by anything else that
speaks the contract.

Each field's comment in protos/holodesk/v1/*.proto ends with its limit exactly as
`FieldLimit.sentence()` writes it ("Limit: 128 characters."); a test holds the
comments to this table, and another fails when a string or repeated field of the
contract has no entry here. Strings are counted in characters (Unicode code
points, Python's len), repeated fields in entries. A limit that is a daemon
setting rather than a constant (frame bytes, sessions listed) names the setting.

Why limits at all: gRPC bounds only a whole message (holodeskd --max-message-mb,
32 MiB); inside one, a 30 MiB action id, a million displays or four 10 MiB tasks
each cost the daemon time, memory and log volume, and could make ListSessions too
large to answer, blinding operators (issue 15).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

# Ids the daemon or a client makes up (uuid hex, "<session>-<n>", resume tokens).
ID_CHARS = 128
# Names: hostnames, OS versions, backends, policies, display names.
NAME_CHARS = 256
# One line of human-readable cause (a cancel reason, an action's error).
REASON_CHARS = 4096
# Natural-language text a person or a model writes (task, thought, answer, reply).
TEXT_CHARS = 16384
# What the model generated for one completion, raw (up to 32768 tokens).
COMPLETION_CHARS = 262144
# Key names: "ctrl", "pagedown", "f24", or the one character a key types.
KEY_CHARS = 32
URL_CHARS = 8192
# Actions in one batch, so results in one observation and ids pending on resume.
MAX_ACTIONS = 64
MAX_DISPLAYS = 64
MAX_ENCODINGS = 16
MAX_CHORD_KEYS = 8
MAX_MODIFIERS = 8
MAX_DRAG_POINTS = 1024
MAX_FRAME_PATCHES = 1024
MAX_DESCRIPTIONS = 64
MAX_COMPLETIONS = 64
MAX_POLICIES = 64
# The daemon's bounds on sampling (SessionStart.sampling).
MAX_CANDIDATES = 16
MAX_SAMPLED_TOKENS = 32768
REWARD_NOTE_CHARS = 65536
# A step's prompt as token ids (Generation.prompt_token_ids): a dozen 1080p screens
# of Nemotron-VL tiles is ~30k; this leaves room for long histories and models.
MAX_PROMPT_TOKENS = 262144
# Policy versions one completion straddles, images one prompt shows.
MAX_VERSION_SPANS = 64
MAX_PROMPT_IMAGES = 64
# A file or folder path on the daemon's host (a checkpoint, an adapter).
PATH_CHARS = 4096
# SessionInfo.task is a preview: the whole list of sessions must fit one message.
TASK_PREVIEW_CHARS = 1024


@dataclass(frozen=True)
class FieldLimit:
    """`count`: entries of a repeated field; `length`: characters of a string (of each
    entry, for a repeated string); `setting`: the daemon setting that bounds the field
    instead, for limits an operator chooses (enforced where that setting is).
    `checked_by`: the module that enforces this limit itself, with a message of its
    own, where `first_violation` leaves it alone."""

    count: int | None = None
    length: int | None = None
    setting: str = ""
    checked_by: str = ""

    def sentence(self) -> str:
        """The limit as the field's .proto comment states it."""
        if self.setting:
            return f"Limit: {self.setting}."
        if self.count is not None and self.length is not None:
            return f"Limit: {self.count} entries of {self.length} characters."
        if self.count is not None:
            return f"Limit: {self.count} entries."
        return f"Limit: {self.length} characters."


_ID = FieldLimit(length=ID_CHARS)
_NAME = FieldLimit(length=NAME_CHARS)
_REASON = FieldLimit(length=REASON_CHARS)
_TEXT = FieldLimit(length=TEXT_CHARS)
_KEY = FieldLimit(length=KEY_CHARS)
_FRAME_BYTES = FieldLimit(setting="holodeskd --max-frame-mb (FrameSpec.max_bytes)")
_V1 = "holodesk.v1."

# Full proto field name -> its limit.
FIELD_LIMITS: dict[str, FieldLimit] = {
    _V1 + name: limit
    for name, limit in {
        # geometry.proto
        "Display.display_id": _ID,
        "Display.name": _NAME,
        # frame.proto
        "Frame.frame_id": _ID,
        "Frame.data": _FRAME_BYTES,
        "Frame.display_id": _ID,
        "Frame.base_frame_id": _ID,
        # Refused with the other hostile-delta checks (issue 15 item 5).
        "Frame.patches": FieldLimit(
            count=MAX_FRAME_PATCHES, checked_by="holodesk.daemon.session.frame_deltas"
        ),
        "FramePatch.data": _FRAME_BYTES,
        # action.proto
        "ClickAction.modifiers": FieldLimit(count=MAX_MODIFIERS),
        "DragAction.path": FieldLimit(count=MAX_DRAG_POINTS),
        "DragAction.modifiers": FieldLimit(count=MAX_MODIFIERS),
        "TypeTextAction.text": _TEXT,
        "KeyChordAction.keys": FieldLimit(count=MAX_CHORD_KEYS, length=KEY_CHARS),
        "KeyDownAction.key": _KEY,
        "KeyUpAction.key": _KEY,
        "DoneAction.answer": _TEXT,
        "FailAction.reason": _REASON,
        "AskUserAction.question": _TEXT,
        "NavigateAction.url": FieldLimit(length=URL_CHARS),
        "Action.action_id": _ID,
        "Action.frame_id": _ID,
        "ActionResult.action_id": _ID,
        "ActionResult.error": _REASON,
        # agent.proto
        "ClientInfo.os": _NAME,
        "ClientInfo.os_version": _NAME,
        "ClientInfo.hostname": _NAME,
        "ClientInfo.client_version": _NAME,
        "ClientInfo.backend": _NAME,
        "SessionStart.task": _TEXT,
        "SessionStart.displays": FieldLimit(count=MAX_DISPLAYS),
        "SessionStart.encodings": FieldLimit(count=MAX_ENCODINGS),
        "SessionStart.resume_token": _ID,
        "SessionStart.policy": _NAME,
        "Observation.results": FieldLimit(count=MAX_ACTIONS),
        "Observation.user_reply": _TEXT,
        "CancelSession.reason": _REASON,
        "SessionStarted.session_id": _ID,
        "SessionStarted.resume_token": _ID,
        "SessionStarted.policy": _NAME,
        "SessionStarted.pending_action_ids": FieldLimit(count=MAX_ACTIONS, length=ID_CHARS),
        "SessionStarted.recording_id": _ID,
        "Actions.actions": FieldLimit(count=MAX_ACTIONS),
        "Actions.thought": _TEXT,
        "Completion.text": FieldLimit(length=COMPLETION_CHARS),
        "Completion.token_ids": FieldLimit(count=MAX_SAMPLED_TOKENS),
        "Completion.token_logprobs": FieldLimit(count=MAX_SAMPLED_TOKENS),
        "Completion.parse_error": _REASON,
        "Completion.versions": FieldLimit(count=MAX_VERSION_SPANS),
        "Generation.completions": FieldLimit(count=MAX_COMPLETIONS),
        "Generation.policy_label": _NAME,
        "Generation.prompt_token_ids": FieldLimit(count=MAX_PROMPT_TOKENS),
        "Generation.images": FieldLimit(count=MAX_PROMPT_IMAGES),
        "PromptImage.frame_id": _ID,
        "PromptImage.content_id": _ID,
        "SessionEnded.answer": _TEXT,
        "SessionEnded.reason": _REASON,
        "SessionHeld.note": _TEXT,
        "ReportRewardRequest.session_id": _ID,
        "ReportRewardRequest.note": FieldLimit(length=REWARD_NOTE_CHARS),
        "LocateRequest.descriptions": FieldLimit(count=MAX_DESCRIPTIONS, length=REASON_CHARS),
        "LocateRequest.policy": _NAME,
        "Location.description": _REASON,
        "Location.raw_output": FieldLimit(length=COMPLETION_CHARS),
        "LocateResponse.locations": FieldLimit(count=MAX_DESCRIPTIONS),
        "PolicyPinning.policy": _NAME,
        "PolicyPinning.model": _NAME,
        "PolicyPinning.engine": _NAME,
        "PolicyPinning.dialect": _NAME,
        "PolicyPinning.prompt_hash": _NAME,
        "PolicyPinning.resize_rule": _NAME,
        "PolicyPinning.coordinates": _NAME,
        "PolicyPinning.policy_version_label": _NAME,
        # computer.proto
        "DesktopInfo.desktop_id": _ID,
        "DesktopInfo.owner": _NAME,
        "DesktopInfo.displays": FieldLimit(count=MAX_DISPLAYS),
        "DesktopInfo.session_id": _ID,
        "DesktopInfo.frame_id": _ID,
        "ListDesktopsResponse.desktops": FieldLimit(setting="holodeskd --max-sessions"),
        "GetFrameRequest.desktop_id": _ID,
        "ActRequest.desktop_id": _ID,
        "ActRequest.actions": FieldLimit(count=MAX_ACTIONS),
        "ActResponse.results": FieldLimit(count=MAX_ACTIONS),
        "ActResponse.frame_id": _ID,
        # control.proto
        "SessionInfo.session_id": _ID,
        "SessionInfo.task": FieldLimit(length=TASK_PREVIEW_CHARS),
        "SessionInfo.policy": _NAME,
        "SessionInfo.client_hostname": _NAME,
        "SessionInfo.client_os": _NAME,
        "SessionInfo.principal": _NAME,
        "ListSessionsResponse.sessions": FieldLimit(setting="holodeskd --max-sessions"),
        "PauseSessionRequest.session_id": _ID,
        "ResumeSessionRequest.session_id": _ID,
        "ResumeSessionRequest.note": _TEXT,
        "CancelSessionRequest.session_id": _ID,
        "CancelSessionRequest.reason": _REASON,
        "PolicyInfo.name": _NAME,
        "PolicyInfo.description": _REASON,
        "GetServerInfoResponse.version": _NAME,
        "GetServerInfoResponse.default_policy": _NAME,
        "GetServerInfoResponse.policies": FieldLimit(count=MAX_POLICIES),
        # trainer.proto
        "PolicyVersion.label": _NAME,
        "PolicyVersion.adapter": _NAME,
        "PolicyVersion.weights_checksum": _NAME,
        "UpdateWeightsRequest.policy": _NAME,
        "UpdateWeightsRequest.checkpoint_dir": FieldLimit(length=PATH_CHARS),
        "UpdateWeightsRequest.label": _NAME,
        "LoadAdapterRequest.policy": _NAME,
        "LoadAdapterRequest.adapter_dir": FieldLimit(length=PATH_CHARS),
        "LoadAdapterRequest.name": _NAME,
        "LoadAdapterRequest.label": _NAME,
        "UnloadAdapterRequest.policy": _NAME,
        "UnloadAdapterRequest.label": _NAME,
        "GetPolicyVersionRequest.policy": _NAME,
    }.items()
}


def limit_of(full_name: str) -> FieldLimit:
    """The limit of a field, by its full proto name ("holodesk.v1.SessionStart.task")."""
    return FIELD_LIMITS[full_name]


def clip(text: str, length: int) -> str:
    """`text`, cut to `length` characters with an ellipsis: for outbound human-readable
    text, where a shortened message beats a refused one."""
    if len(text) <= length:
        return text
    return text[: max(0, length - 1)] + "…"


@dataclass(frozen=True)
class Violation:
    """A field over its limit: `field` is its path ("start.displays[2].name")."""

    field: str
    description: str


# What to look at in each message type: its own limited fields, and the message
# fields to walk into (only those that have something limited somewhere below).
_Plan = tuple[tuple[tuple[str, bool, FieldLimit], ...], tuple[tuple[str, bool], ...]]
_PLANS: dict[str, _Plan] = {}


def _plan(descriptor: Descriptor) -> _Plan:
    plan = _PLANS.get(descriptor.full_name)
    if plan is not None:
        return plan
    _PLANS[descriptor.full_name] = ((), ())  # a recursive type sees itself as done
    checks: list[tuple[str, bool, FieldLimit]] = []
    walks: list[tuple[str, bool]] = []
    for field in descriptor.fields:
        limit = FIELD_LIMITS.get(field.full_name)
        if limit is not None and not limit.setting and not limit.checked_by:
            checks.append((field.name, field.is_repeated, limit))
        inner = field.message_type
        if inner is not None and inner.full_name.startswith(_V1) and _plan(inner) != ((), ()):
            walks.append((field.name, field.is_repeated))
    plan = (tuple(checks), tuple(walks))
    _PLANS[descriptor.full_name] = plan
    return plan


def first_violation(message: Message, field: str = "") -> Violation | None:
    """The first field of `message` (and of the messages inside it) over its limit.

    Counts are checked before entries are looked at, so a million displays cost one
    len(), not a million conversions. `field` prefixes the paths ("start").
    """
    # upb's Descriptor is the same type at run time; its stubs name two.
    checks, walks = _plan(cast(Descriptor, message.DESCRIPTOR))
    prefix = f"{field}." if field else ""
    for name, repeated, limit in checks:
        value = getattr(message, name)
        path = prefix + name
        if repeated and limit.count is not None and len(value) > limit.count:
            return Violation(path, f"at most {limit.count} entries, got {len(value)}")
        if limit.length is None:
            continue
        for index, text in enumerate(value) if repeated else ((None, value),):
            if len(text) > limit.length:
                where = path if index is None else f"{path}[{index}]"
                return Violation(where, f"at most {limit.length} characters, got {len(text)}")
    for name, repeated in walks:
        if repeated:
            for index, item in enumerate(getattr(message, name)):
                found = first_violation(item, f"{prefix}{name}[{index}]")
                if found is not None:
                    return found
        elif message.HasField(name):
            found = first_violation(getattr(message, name), prefix + name)
            if found is not None:
                return found
    return None
