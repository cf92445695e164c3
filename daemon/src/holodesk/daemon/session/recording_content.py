"""What a daemon-side recording holds of a session, apart from when it is written.

The recorder (recorder.py) decides when and on which thread each write happens;
this module decides what is written: the manifest of a new recording, a contract
message as the recording's JSON
(``json_format.MessageToDict(preserving_proto_field_name=True)``), the prompt with
each image replaced by its frame id, a screen flattened to one image. It is the only
place that turns contract messages into the recording's JSON objects
(docs/recording-format.md). Plain functions: no queue, no thread, no state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from holodesk.daemon import convert, frame_pixels
from holodesk.daemon.engines.base import ChatMessage, ImagePart, TextPart
from holodesk.daemon.frames import EncodedFrame, FrameSpec
from holodesk.daemon.policies.base import Policy
from holodesk.daemon.session.sessions import Session
from holodesk.data.format import Manifest, make_recording_id
from holodesk.data.writer import RecordingWriter
from holodesk.proto.v1 import agent_pb2


def to_dict(message: Message) -> dict[str, Any]:
    """A contract message as the recording stores it."""
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def manifest_for(
    session: Session, start: agent_pb2.SessionStart, policy: Policy, spec: FrameSpec
) -> Manifest:
    """The manifest of `session`'s new recording: who, what task, which policy,
    dialect and model, the displays, frame spec and sampling it started with."""
    return Manifest(
        recording_id=make_recording_id(session.session_id, session.started_at),
        session_id=session.session_id,
        task=session.task,
        policy=policy.name,
        dialect=_text_attribute(getattr(policy, "dialect", None), "name"),
        model=_text_attribute(getattr(policy, "engine", None), "model"),
        principal=session.principal,
        # A copy: the manifest is the writer's to change, the session's is not.
        client=session.request.client.model_copy(),
        displays=[to_dict(display) for display in start.displays],
        frame_spec=to_dict(convert.frame_spec_to_pb(spec)),
        sampling=to_dict(start.sampling) if start.HasField("sampling") else None,
        started_at=session.started_at,
    )


def prompt_dicts(
    messages: Sequence[ChatMessage], frames: Sequence[EncodedFrame]
) -> list[dict[str, Any]]:
    """The engine's prompt with each image replaced by its frame id and model size.

    A dialect puts one image per frame of the window, oldest first, the current screen
    last; the images are matched to the window's frames by that order, from the end.
    """
    images = [
        part for message in messages for part in message.content if isinstance(part, ImagePart)
    ]
    offset = len(frames) - len(images)
    index = 0
    out: list[dict[str, Any]] = []
    for message in messages:
        content: list[dict[str, Any]] = []
        for part in message.content:
            if isinstance(part, TextPart):
                content.append({"type": "text", "text": part.text})
            elif isinstance(part, ImagePart):
                position = offset + index
                index += 1
                frame_id = frames[position].frame_id if 0 <= position < len(frames) else ""
                content.append(
                    {
                        "type": "image",
                        "frame_id": frame_id,
                        "width": part.width,
                        "height": part.height,
                    }
                )
        entry: dict[str, Any] = {"role": message.role, "content": content}
        # A tool-calling dialect's turns: the calls the model made and which call a
        # tool turn answers (format.PromptMessage); without them its history reads
        # as text with no calls.
        if message.tool_calls:
            entry["tool_calls"] = [
                {"id": call.id, "name": call.name, "arguments": call.arguments}
                for call in message.tool_calls
            ]
        if message.tool_call_id:
            entry["tool_call_id"] = message.tool_call_id
        out.append(entry)
    return out


def _text_attribute(owner: object, name: str) -> str | None:
    value = getattr(owner, name, None) if owner is not None else None
    return value if isinstance(value, str) and value else None


def write_frame(writer: RecordingWriter, step: int, frame: EncodedFrame) -> None:
    """A recording holds each screen as one image: a rebuilt frame's patches are
    painted in and encoded here, in the writer's thread, never on the event loop."""
    flat = frame_pixels.standalone(frame)
    source = flat.source
    writer.write_frame(
        step,
        flat.frame_id,
        flat.data,
        encoding=flat.encoding.value,
        width=flat.size.width,
        height=flat.size.height,
        display_id=flat.display_id,
        source=None
        if source is None
        else {"x": source.x, "y": source.y, "width": source.width, "height": source.height},
        scale_factor=flat.scale_factor,
    )
