"""The recording format, version 1: names, pydantic models and validation.

Documented in docs/recording-format.md. A recording is a directory::

    <recording_id>/recording.json   the manifest (:class:`Manifest`)
    <recording_id>/events.jsonl     one event per line (:data:`Event`)
    <recording_id>/frames/          the image files named by frame events

Public API:

- :data:`FORMAT_NAME`, :data:`FORMAT_VERSION`, :data:`MANIFEST_FILE`, :data:`EVENTS_FILE`,
  :data:`FRAMES_DIR`, :data:`OUTCOMES`, :data:`Outcome`, :data:`ENCODINGS`.
- :class:`Manifest` (with :class:`ClientInfo`), :func:`parse_manifest`.
- Events: :class:`FrameEvent`, :class:`ActionsEvent`, :class:`ObservationEvent`,
  :class:`EndEvent`, :class:`RewardEvent` (the union :data:`Event`), :func:`parse_event`
  (``None`` for an unknown event type: readers skip those).
- Prompts in actions events: :class:`PromptMessage` of :class:`TextPart` / :class:`ImagePart`
  (:class:`OtherPart` keeps a part type this version does not know).
- :func:`make_recording_id`, :func:`frame_file_name`, :class:`RecordingError`,
  :class:`RecordingFormatError`.
- Names that become paths: :func:`safe_name` makes one from any text (a session id,
  a frame id from the wire), :func:`check_name` refuses a name read back (a manifest's
  ``recording_id``) that is not one; :data:`NAME_RULE` says what one is.

Compatibility: :data:`FORMAT_VERSION` is the major version. Readers refuse a newer one
and ignore fields and event types they do not know; writers of the same version only add
optional fields and event types. The contract's messages (``Actions``, ``ActionResult``,
``Display``, ``FrameSpec``, ``SamplingParams``) are stored as opaque JSON objects
(protobuf's ``MessageToDict(preserving_proto_field_name=True)``): this package never
imports protobuf.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
)

from holodesk.values.encoding import ImageEncoding

FORMAT_NAME: Final = "holodesk-recording"
FORMAT_VERSION: Final = 1

MANIFEST_FILE: Final = "recording.json"
EVENTS_FILE: Final = "events.jsonl"
FRAMES_DIR: Final = "frames"

Outcome = Literal["succeeded", "failed", "cancelled", "step_limit", "time_limit"]
OUTCOMES: Final[tuple[str, ...]] = ("succeeded", "failed", "cancelled", "step_limit", "time_limit")
# A frame file's encoding: an ImageEncoding value (holodesk.values.encoding). A type
# must spell its values; tests/values/test_values.py holds it to the enum.
ImageEncodingValue = Literal["png", "jpeg", "webp"]
ENCODINGS: Final[tuple[str, ...]] = tuple(encoding.value for encoding in ImageEncoding)
_EXTENSIONS: Final = {"png": "png", "jpeg": "jpg", "webp": "webp"}

JsonObject = dict[str, Any]


class RecordingError(Exception):
    """A recording cannot be written or read (missing files, bad paths, I/O)."""


class RecordingFormatError(RecordingError):
    """A recording's files are not valid holodesk-recording data of a supported version."""


class _Event(BaseModel):
    # Readers ignore fields added by later writers of the same major version.
    model_config = ConfigDict(extra="ignore", frozen=True)

    t: float = Field(ge=0, description="Seconds since the manifest's started_at.")
    step: int = Field(ge=0)


class Rect(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    x: int = 0
    y: int = 0
    width: int = 0
    height: int = 0


class FrameEvent(_Event):
    """An image exactly as the policy saw it (for delta frames: the daemon's rebuilt image)."""

    type: Literal["frame"] = "frame"
    frame_id: str
    file: str = Field(description="Path relative to the recording directory.")
    encoding: ImageEncodingValue
    width: int = Field(ge=0)
    height: int = Field(ge=0)
    display_id: str = ""
    source: Rect = Field(default_factory=Rect)
    scale_factor: float = 1.0


class TextPart(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    type: Literal["text"] = "text"
    text: str


class ImagePart(BaseModel):
    """An image of the prompt: the frame it came from, and the size the model saw."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    type: Literal["image"] = "image"
    frame_id: str
    width: int = 0
    height: int = 0


class OtherPart(BaseModel):
    """A prompt part of a type this version does not know; kept as is."""

    model_config = ConfigDict(extra="allow", frozen=True)

    type: str


def _part_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in ("text", "image") else "other"


PromptPart = Annotated[
    Annotated[TextPart, Tag("text")]
    | Annotated[ImagePart, Tag("image")]
    | Annotated[OtherPart, Tag("other")],
    Discriminator(_part_tag),
]


class PromptToolCall(BaseModel):
    """A function call an assistant turn made (tool-calling dialects); `arguments`
    is the JSON text the model wrote."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = ""
    name: str
    arguments: str = ""


class PromptMessage(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    role: str
    content: list[PromptPart]
    # An assistant turn's calls; a tool turn's answer names its call's id.
    tool_calls: list[PromptToolCall] = Field(default_factory=list)
    tool_call_id: str = ""


class ActionsEvent(_Event):
    """One Actions message as sent to the client, with the prompt that produced it."""

    type: Literal["actions"] = "actions"
    frame_id: str = ""
    message: JsonObject = Field(description="The contract's Actions message as a JSON object.")
    prompt: list[PromptMessage] | None = None
    policy_seconds: float = 0.0


class ObservationEvent(_Event):
    """Results of step ``step``'s actions as the client reported them."""

    type: Literal["observation"] = "observation"
    results: list[JsonObject] = Field(default_factory=list)
    user_reply: str = ""


class EndEvent(_Event):
    type: Literal["end"] = "end"
    outcome: Outcome
    answer: str = ""
    reason: str = ""
    steps: int = Field(ge=0, default=0)


class RewardEvent(_Event):
    type: Literal["reward"] = "reward"
    reward: float | None = None
    success: bool | None = None
    note: str = ""


Event = FrameEvent | ActionsEvent | ObservationEvent | EndEvent | RewardEvent
_EVENT_TYPES: Final[dict[str, type[_Event]]] = {
    "frame": FrameEvent,
    "actions": ActionsEvent,
    "observation": ObservationEvent,
    "end": EndEvent,
    "reward": RewardEvent,
}


class ClientInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    os: str = ""
    os_version: str = ""
    hostname: str = ""
    client_version: str = ""
    backend: str = ""


class Manifest(BaseModel):
    """recording.json. Unknown fields are kept (``extra="allow"``) so that rewriting a
    manifest written by a later minor writer does not drop them."""

    model_config = ConfigDict(extra="allow")

    format: Literal["holodesk-recording"] = FORMAT_NAME
    version: int = FORMAT_VERSION
    recording_id: str
    session_id: str
    task: str = ""
    policy: str = ""
    dialect: str | None = None
    model: str | None = None
    principal: str = ""
    client: ClientInfo = Field(default_factory=ClientInfo)
    displays: list[JsonObject] = Field(default_factory=list)
    frame_spec: JsonObject = Field(default_factory=dict)
    sampling: JsonObject | None = None
    started_at: datetime
    ended_at: datetime | None = None
    outcome: Outcome | None = None
    answer: str = ""
    reason: str = ""
    steps: int = Field(ge=0, default=0)
    reward: float | None = None
    success: bool | None = None
    reward_note: str = ""

    @field_validator("recording_id")
    @classmethod
    def _recording_id_is_a_name(cls, value: str) -> str:
        # Readers name files after it (`holodesk report`'s page): a crafted manifest
        # must not point them at ../../somewhere or an absolute path.
        problem = _name_problem(value)
        if problem:
            raise ValueError(f"recording_id {value!r} {problem}")
        return value


def parse_manifest(data: Any, *, source: str = MANIFEST_FILE) -> Manifest:
    """Validates a decoded recording.json; refuses other formats and newer versions."""
    if not isinstance(data, dict):
        raise RecordingFormatError(f"{source}: expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT_NAME:
        raise RecordingFormatError(
            f"{source}: format is {data.get('format')!r}, expected {FORMAT_NAME!r}"
        )
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise RecordingFormatError(f"{source}: version must be a positive integer, got {version!r}")
    if version > FORMAT_VERSION:
        raise RecordingFormatError(
            f"{source}: recording format version {version} is newer than this reader's "
            f"({FORMAT_VERSION}); upgrade holodesk-data to read it"
        )
    try:
        return Manifest.model_validate(data)
    except ValidationError as error:
        raise RecordingFormatError(f"{source}: invalid manifest: {error}") from error


def parse_event(data: Any, *, source: str = EVENTS_FILE) -> Event | None:
    """Validates one decoded events.jsonl line; ``None`` for an event type this version
    does not know (readers skip those)."""
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise RecordingFormatError(f"{source}: an event must be a JSON object with a string 'type'")
    model = _EVENT_TYPES.get(data["type"])
    if model is None:
        return None
    try:
        event: Event = model.model_validate(data)  # type: ignore[assignment]
    except ValidationError as error:
        raise RecordingFormatError(f"{source}: invalid {data['type']!r} event: {error}") from error
    return event


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
NAME_MAX: Final = 128
_NAME = re.compile(rf"[A-Za-z0-9_-][A-Za-z0-9._-]{{0,{NAME_MAX - 1}}}")
NAME_RULE: Final = (
    f"a name is 1-{NAME_MAX} of A-Z a-z 0-9 . _ - and does not start with '.': "
    "one path component, never '..', a separator, a drive or an absolute path"
)


def safe_name(text: str, limit: int = NAME_MAX, empty: str = "x") -> str:
    """One path component made from any text: runs of characters outside A-Z a-z 0-9
    . _ - become '_', no leading '.', at most `limit` characters (a name, NAME_RULE,
    when limit <= NAME_MAX)."""
    cleaned = _UNSAFE.sub("_", text).strip("._")[:limit].rstrip(".")
    return cleaned or empty


def check_name(name: str, what: str) -> str:
    """`name`, when it is a name (NAME_RULE) that may become a path; else
    RecordingFormatError naming `what`."""
    problem = _name_problem(name)
    if problem:
        raise RecordingFormatError(f"{what} {name!r} {problem}")
    return name


def _name_problem(name: str) -> str:
    return "" if _NAME.fullmatch(name) else f"is not a name ({NAME_RULE})"


def is_refresh(step: int, action_count: int, last_step: int) -> bool:
    """Whether a batch of actions only asked for a fresh frame: none, under the last
    step's number again (a step, even one without actions, has the next number).

    Recordings write a refresh as the frame it brings, not as a step; client
    recordings made before that wrote it as an actions event and an empty
    observation, which readers skip (`reader.step_events`).
    """
    return action_count == 0 and step == last_step


def make_recording_id(session_id: str, started_at: datetime) -> str:
    """``<UTC %Y%m%dT%H%M%SZ>-<session_id>``: sorts by start time, one directory name."""
    stamp = started_at.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{safe_name(session_id, 96)}"


def frame_file_name(index: int, frame_id: str, encoding: str) -> str:
    """``frames/000001-<frame_id sanitized>.<ext>``; the index keeps names unique."""
    extension = _EXTENSIONS.get(encoding)
    if extension is None:
        raise RecordingError(
            f"unknown frame encoding {encoding!r}; expected one of {', '.join(ENCODINGS)}"
        )
    return f"{FRAMES_DIR}/{index:06d}-{safe_name(frame_id, 64)}.{extension}"
