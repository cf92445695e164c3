"""The text of an answer to a request with tools: what the model wrote besides its
calls, and the calls, as one JSON object.

Why text: the engine seam returns text (`Sample.text`), and a dialect's parser
reads text; a request with tools is answered the same way by every engine, so the
policy, the recording and the repair path need nothing new. The openai engine
writes the server's `message.content` and `message.tool_calls` into it; the
in-process engines the content and calls vLLM's tool-call parser read from the
model's own syntax (engines/vllm_tools.py). The format:

    {"content": str | null, "tool_calls": [{"id": str, "name": str, "arguments": str}]}

`arguments` stays the JSON text the model wrote, so a malformed one is the
dialect's parse error (and a repair prompt), not an engine failure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from holodesk.daemon.engines.base import ToolCall


@dataclass(frozen=True)
class ToolReply:
    content: str
    calls: tuple[ToolCall, ...]


def reply_text(content: str | None, calls: Sequence[ToolCall]) -> str:
    body = {
        "content": content or None,
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls],
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def read_reply(text: str) -> ToolReply:
    """The reply written by `reply_text`; ValueError for any other text."""
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not a tool reply: {exc}") from None
    if not isinstance(body, dict) or not isinstance(body.get("tool_calls"), list):
        raise ValueError("not a tool reply: no tool_calls list")
    content = body.get("content")
    calls: list[ToolCall] = []
    for index, raw in enumerate(body["tool_calls"]):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            raise ValueError(f"tool_calls[{index}] has no name")
        arguments = raw.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        call_id = raw.get("id")
        calls.append(ToolCall(raw["name"], arguments, call_id if isinstance(call_id, str) else ""))
    return ToolReply(content if isinstance(content, str) else "", tuple(calls))
