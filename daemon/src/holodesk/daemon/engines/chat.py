"""ChatMessages -> the chat format of Hugging Face chat templates, images decoded.

A model's own chat template renders the conversation: every message becomes
`{"role": ..., "content": [parts]}`, a text part `{"type": "text", "text": ...}`
and an image part `{"type": "image"}` (where the template writes the model's
image placeholder); the images come back separately, in order, as PIL images
for the processor or engine that expands each placeholder.

Tool use, as Hugging Face templates take it: an assistant turn's calls become
`tool_calls: [{"id", "type": "function", "function": {"name", "arguments"}}]` with
the arguments as an object (templates write them with `tojson`; text that is not a
JSON object stays text), a tool turn carries its `tool_call_id`; the tools
themselves go to `apply_chat_template(tools=...)` (`template_tools`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from PIL import Image

from holodesk.daemon.engines.base import (
    ChatMessage,
    EngineError,
    GenerationRequest,
    ImagePart,
    TextPart,
    ToolCall,
)


@dataclass(frozen=True)
class TemplateChat:
    messages: list[dict[str, Any]]
    images: tuple[Image.Image, ...]


def template_chat(messages: tuple[ChatMessage, ...], *, decode: bool = True) -> TemplateChat:
    """The chat for `apply_chat_template`; decode=False skips image decoding (a
    rendering check that needs only the placeholders)."""
    images: list[Image.Image] = []
    chat: list[dict[str, Any]] = []
    for message in messages:
        parts: list[dict[str, Any]] = []
        for part in message.content:
            if isinstance(part, TextPart):
                parts.append({"type": "text", "text": part.text})
            else:
                if decode:
                    images.append(decode_image(part))
                parts.append({"type": "image"})
        entry: dict[str, Any] = {"role": message.role, "content": parts}
        if message.tool_calls:
            entry["tool_calls"] = [template_call(call) for call in message.tool_calls]
        if message.tool_call_id:
            entry["tool_call_id"] = message.tool_call_id
        chat.append(entry)
    return TemplateChat(chat, tuple(images))


def template_call(call: ToolCall) -> dict[str, Any]:
    arguments: Any = call.arguments
    try:
        parsed = json.loads(call.arguments)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        arguments = parsed
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def template_tools(request: GenerationRequest) -> dict[str, Any]:
    """Keyword arguments for `apply_chat_template`: the tools, where the request has any."""
    return {"tools": list(request.tools.tools)} if request.tools is not None else {}


def decode_image(part: ImagePart) -> Image.Image:
    try:
        return part.pixels()
    except (OSError, ValueError) as exc:
        raise EngineError(f"cannot decode a {part.mime_type} image: {exc}") from exc
