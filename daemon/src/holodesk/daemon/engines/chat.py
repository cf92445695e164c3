"""ChatMessages -> the chat format of Hugging Face chat templates, images decoded.

A model's own chat template renders the conversation: every message becomes
`{"role": ..., "content": [parts]}`, a text part `{"type": "text", "text": ...}`
and an image part `{"type": "image"}` (where the template writes the model's
image placeholder); the images come back separately, in order, as PIL images
for the processor or engine that expands each placeholder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PIL import Image

from holodesk.daemon.engines.base import ChatMessage, EngineError, ImagePart, TextPart


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
        chat.append({"role": message.role, "content": parts})
    return TemplateChat(chat, tuple(images))


def decode_image(part: ImagePart) -> Image.Image:
    try:
        return part.pixels()
    except (OSError, ValueError) as exc:
        raise EngineError(f"cannot decode a {part.mime_type} image: {exc}") from exc
