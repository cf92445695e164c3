"""The shared server's chat template (the tool template) renders every tool-less
conversation this package sends exactly as the tiny model's own ChatML template
does: the premise that lets the abort and hdesktop modules share the tool module's
`vllm serve --chat-template`. Rendered as transformers renders for vLLM (its jinja
environment), in both forms vLLM may hand a template: content as parts (image_url
parts become {"type": "image"}) and as one string with the image placeholders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from holodesk.daemon.dialects.base import DialectParseError
from holodesk.daemon.engines.base import ChatMessage
from holodesk.daemon.engines.openai_wire import message_json
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Size
from holodesk.daemon.steps import StepContext
from tests.engines import hdesktop_conversation
from tests.engines.support import needs_vllm, png, request, tiny_dialect
from tests.engines.tool_template import TOOL_CHAT_TEMPLATE
from tests.support.tiny_models import CHAT_TEMPLATE

pytestmark = needs_vllm  # vLLM brings transformers, whose renderer this is


def as_parts(messages: tuple[ChatMessage, ...]) -> list[dict[str, Any]]:
    """What the OpenAI wire carries, as vLLM gives it to a template that walks parts."""
    rendered = []
    for message in messages:
        content = message_json(message)["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        parts = [{"type": "image"} if part["type"] == "image_url" else part for part in content]
        rendered.append({"role": message.role, "content": parts})
    return rendered


def as_strings(messages: tuple[ChatMessage, ...]) -> list[dict[str, Any]]:
    """The same with each turn's content as one string, images as placeholders."""
    return [
        {"role": m["role"], "content": "".join(p.get("text", "<image>") for p in m["content"])}
        for m in as_parts(messages)
    ]


def render(template: str, messages: list[dict[str, Any]]) -> str:
    from transformers.utils.chat_template_utils import render_jinja_template

    texts, _ = render_jinja_template(
        conversations=[messages], chat_template=template, add_generation_prompt=True
    )
    return str(texts[0])


def daemon_conversations(tmp_path: Path) -> list[tuple[ChatMessage, ...]]:
    """A gibberish session's first step and both repairs (the abort module's daemon)."""
    dialect = tiny_dialect(tmp_path)
    frame = EncodedFrame("f0", Size(400, 400), ImageEncoding.PNG)
    step = dialect.step_messages(
        StepContext("s", "task 0", 1, frames=(frame,), history=()), (png(400, 400),)
    )
    error = DialectParseError("not JSON", "Answer in JSON.")
    first = dialect.repair_messages(step, "gibberish {", error)
    return [step, first, dialect.repair_messages(first, "more gibberish", error)]


def test_the_tool_template_renders_tool_less_conversations_as_the_models_own(
    tmp_path: Path,
) -> None:
    hdesktop = hdesktop_conversation.conversation(hdesktop_conversation.short_dialect())
    conversations = [
        *(request("r", images=n).messages for n in range(3)),
        hdesktop,
        *daemon_conversations(tmp_path),
    ]
    for messages in conversations:
        for form in (as_parts(messages), as_strings(messages)):
            own = render(CHAT_TEMPLATE, form)
            assert "<|im_start|>assistant\n" in own  # a real render, not an empty one
            assert render(TOOL_CHAT_TEMPLATE, form) == own
    assert [m.role for m in hdesktop].count("assistant") == 2  # assistant turns covered


@pytest.mark.parametrize("template", [CHAT_TEMPLATE, TOOL_CHAT_TEMPLATE])
def test_an_image_part_renders_as_the_placeholder(template: str) -> None:
    messages = as_parts(request("r", images=2).messages)
    assert render(template, messages).count("<image>") == 2
