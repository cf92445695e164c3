"""Tools on the OpenAI wire, both ways: a request with tools sends `tools`,
`tool_choice` and `parallel_tool_calls`; an answer's `message.tool_calls` (content
null, arguments as JSON text or, from some servers, as an object) become the tool
reply the dialects read; a malformed tool_calls list is an EngineError naming it,
never a crash. (The end-to-end exchange with a real server is
vllm_serve/test_openai_vllm_serve_tools.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.base import ChatMessage, EngineError, GenerationRequest, TextPart
from holodesk.daemon.engines.openai_wire import chat_body, parse_completion
from holodesk.daemon.engines.tool_reply import read_reply


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}


def test_a_request_with_tools_sends_them() -> None:
    use = get_dialect("nemotron-tools").tool_use()
    assert use is not None
    message = ChatMessage("user", (TextPart("go"),))
    body = chat_body(GenerationRequest("r", (message,), tools=use), model="m")
    assert body["tools"] == list(use.tools)
    assert body["tool_choice"] == "required"
    assert body["parallel_tool_calls"] is False
    assert "response_format" not in body  # the tools are the constraint
    plain = chat_body(GenerationRequest("r", (message,)), model="m")
    assert "tools" not in plain
    assert "tool_choice" not in plain


def test_tool_calls_become_the_tool_reply() -> None:
    call = {
        "id": "c7",
        "type": "function",
        "function": {"name": "navigate", "arguments": '{"url": "back"}'},
    }
    as_object = {
        "id": "c8",
        "type": "function",
        "function": {"name": "terminate", "arguments": {"status": "success"}},
    }
    payload = completion({"role": "assistant", "content": None, "tool_calls": [call, as_object]})
    reply = read_reply(parse_completion(payload, tools=True).text)
    assert reply.content == ""
    assert [(c.id, c.name) for c in reply.calls] == [("c7", "navigate"), ("c8", "terminate")]
    assert json.loads(reply.calls[1].arguments) == {"status": "success"}
    # Text and no call: a reply with no calls (the dialect's parse error), not an error here.
    said = parse_completion(completion({"role": "assistant", "content": "hm"}), tools=True)
    assert read_reply(said.text).calls == ()
    assert read_reply(said.text).content == "hm"
    # Without tools asked for, the content is the text, as before.
    assert parse_completion(completion({"role": "assistant", "content": "hm"})).text == "hm"


@pytest.mark.parametrize(
    ("tool_calls", "error"),
    [
        ({"name": "x"}, "tool_calls is not a list"),
        ([{"type": "function"}], "without a function name"),
        ([{"function": {"arguments": "{}"}}], "without a function name"),
    ],
)  # fmt: skip
def test_malformed_tool_calls_are_engine_errors(tool_calls: Any, error: str) -> None:
    payload = completion({"role": "assistant", "content": None, "tool_calls": tool_calls})
    with pytest.raises(EngineError, match=error):
        parse_completion(payload, tools=True)
