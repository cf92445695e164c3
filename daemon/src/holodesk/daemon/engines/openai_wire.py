"""The OpenAI chat-completions wire format: request bodies out, answers in.

Pure functions, no I/O, so the encoding (base64 of every image, a few MB of
JSON per step) can run in a worker thread, off the event loop.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Mapping
from dataclasses import replace
from enum import StrEnum
from typing import Any

from holodesk.daemon.engines.base import (
    ChatMessage,
    EngineError,
    GenerationRequest,
    GenerationResult,
    ImagePart,
    Sample,
    TextPart,
    ToolCall,
)
from holodesk.daemon.engines.tool_reply import reply_text

_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]+")
# vLLM's server writes tokens this way when asked `return_tokens_as_token_ids`.
_TOKEN_ID = re.compile(r"token_id:([0-9]+)")
_ERROR_SNIPPET = 500


class StructuredOutput(StrEnum):
    """How a request's JSON schema reaches the server."""

    # OpenAI's `response_format` json_schema: vLLM, SGLang, TGI, llama.cpp and OpenAI itself.
    RESPONSE_FORMAT = "response_format"
    # vLLM's own extra field, for vLLM servers older than response_format support.
    GUIDED_JSON = "guided_json"
    # Send no schema; the dialect's parser still validates the answer.
    NONE = "none"


def schema_name(schema: Mapping[str, Any]) -> str:
    """OpenAI wants a name of at most 64 of [A-Za-z0-9_-]; the schema's title is a good one."""
    title = schema.get("title")
    name = _SCHEMA_NAME.sub("_", title).strip("_") if isinstance(title, str) else ""
    return (name or "holodesk_output")[:64]


def image_url(image: ImagePart) -> str:
    return f"data:{image.mime_type};base64,{base64.b64encode(image.encoded()).decode('ascii')}"


def message_json(message: ChatMessage) -> dict[str, Any]:
    body = _content_json(message)
    if message.tool_calls:
        body["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    if message.tool_call_id:
        body["tool_call_id"] = message.tool_call_id
    return body


def _content_json(message: ChatMessage) -> dict[str, Any]:
    if not message.images:
        # Plain string content: every server takes it for every role, while some
        # (and some chat templates) reject a parts list on system/assistant turns.
        return {"role": message.role, "content": message.text}
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        else:
            parts.append({"type": "image_url", "image_url": {"url": image_url(part)}})
    return {"role": message.role, "content": parts}


def chat_body(
    request: GenerationRequest,
    *,
    model: str,
    structured: StructuredOutput = StructuredOutput.RESPONSE_FORMAT,
    extra_body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    sampling = request.sampling
    body: dict[str, Any] = {
        "model": model,
        "messages": [message_json(m) for m in request.messages],
        "max_tokens": sampling.max_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "stream": False,
    }
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    # Only when asked, so a request for one plain answer stays what every server takes.
    if request.n > 1:
        body["n"] = request.n
    if request.logprobs:
        body["logprobs"] = True
    if request.tools is not None:
        # The server renders them with the model's template and reads the calls with
        # its --tool-call-parser; "required" makes vLLM constrain decoding to them.
        body["tools"] = list(request.tools.tools)
        body["tool_choice"] = request.tools.choice
        body["parallel_tool_calls"] = request.tools.parallel
    schema = request.json_schema
    if schema is not None and structured is StructuredOutput.RESPONSE_FORMAT:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema_name(schema), "schema": schema, "strict": True},
        }
    elif schema is not None and structured is StructuredOutput.GUIDED_JSON:
        body["guided_json"] = schema
    # Last, so an operator can override anything above (or add top_k,
    # chat_template_kwargs, mm_processor_kwargs, ...).
    body.update(extra_body or {})
    return body


def encode_chat_body(
    request: GenerationRequest,
    *,
    model: str,
    structured: StructuredOutput,
    extra_body: Mapping[str, Any] | None,
) -> bytes:
    body = chat_body(request, model=model, structured=structured, extra_body=extra_body)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _usage_count(usage: Any, key: str) -> int:
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def parse_completion(
    payload: Any, *, logprobs: bool = False, tools: bool = False
) -> GenerationResult:
    """Every choice (in `index` order) and the token counts of a chat.completion object.

    With `tools` (the request offered some), each choice's text is its tool reply
    (engines/tool_reply.py): its content and `message.tool_calls`.

    With `logprobs`, each choice's `logprobs.content[].logprob` becomes its token
    log-probabilities. OpenAI's API gives no token ids: they stay empty, unless a
    vLLM server writes its tokens as "token_id:N" (`return_tokens_as_token_ids`).
    """
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if (
        not isinstance(choices, list)
        or not choices
        or not all(isinstance(c, dict) for c in choices)
    ):
        raise EngineError(f"the answer has no choices: {snippet(payload)}")
    ordered = sorted(
        choices, key=lambda c: c.get("index", 0) if isinstance(c.get("index"), int) else 0
    )
    samples = tuple(_sample(choice, logprobs, tools) for choice in ordered)
    usage = payload.get("usage")
    completion_tokens = _usage_count(usage, "completion_tokens")
    if len(samples) == 1 and not samples[0].completion_tokens:
        samples = (replace(samples[0], completion_tokens=completion_tokens),)
    return GenerationResult(
        text=samples[0].text,
        prompt_tokens=_usage_count(usage, "prompt_tokens"),
        # The whole answer's count (all choices), as the server reports it.
        completion_tokens=completion_tokens,
        samples=samples,
    )


def _sample(choice: dict[str, Any], logprobs: bool, tools: bool = False) -> Sample:
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if tools and isinstance(message, dict):
        content = reply_text(content if isinstance(content, str) else None, _calls(message))
    if not isinstance(content, str):
        refusal = message.get("refusal") if isinstance(message, dict) else None
        why = f"the model refused: {refusal}" if refusal else "the answer has no text content"
        raise EngineError(f"{why}: {snippet(choice)}")
    finish = choice.get("finish_reason")
    finish_reason = finish if isinstance(finish, str) else None
    if not logprobs:
        return Sample(content, finish_reason=finish_reason)
    tokens = _token_logprobs(choice)
    values = tuple(logprob for _, logprob in tokens)
    ids = tuple(_TOKEN_ID.fullmatch(token) for token, _ in tokens)
    token_ids = tuple(int(m.group(1)) for m in ids if m) if all(ids) else ()
    return Sample(
        content,
        completion_tokens=len(values),
        token_ids=token_ids,
        token_logprobs=values,
        cumulative_logprob=math.fsum(values),
        finish_reason=finish_reason,
    )


def _calls(message: dict[str, Any]) -> list[ToolCall]:
    """`message.tool_calls` as ToolCalls; EngineError for a list that is not OpenAI's."""
    raw = message.get("tool_calls") or []
    if not isinstance(raw, list):
        raise EngineError(f"tool_calls is not a list: {snippet(message)}")
    calls: list[ToolCall] = []
    for entry in raw:
        function = entry.get("function") if isinstance(entry, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(function, dict) or not isinstance(name, str):
            raise EngineError(f"a tool call without a function name: {snippet(entry)}")
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):  # some servers send the object itself
            arguments = json.dumps(arguments, ensure_ascii=False)
        call_id = entry.get("id")
        calls.append(ToolCall(name, arguments, call_id if isinstance(call_id, str) else ""))
    return calls


def _token_logprobs(choice: dict[str, Any]) -> list[tuple[str, float]]:
    """(token, logprob) of choices[].logprobs.content[]; EngineError if asked and absent."""
    block = choice.get("logprobs")
    content = block.get("content") if isinstance(block, dict) else None
    if not isinstance(content, list):
        raise EngineError(f"logprobs were asked for, the answer has none: {snippet(choice)}")
    tokens: list[tuple[str, float]] = []
    for entry in content:
        value = entry.get("logprob") if isinstance(entry, dict) else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise EngineError(f"a token without a logprob in the answer: {snippet(entry)}")
        token = entry.get("token")
        # -9999.0 is OpenAI's stand-in for -inf; a float is what the contract carries.
        tokens.append((token if isinstance(token, str) else "", float(value)))
    return tokens


def error_message(text: str) -> str:
    """The server's own words from an error body: OpenAI's {"error": {"message"}},
    vLLM's older {"message"}, FastAPI's {"detail"}; else the body itself, cut short."""
    try:
        payload = json.loads(text)
    except ValueError:
        return snippet(text)
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        for key in ("message", "detail", "error"):
            if isinstance(payload.get(key), str):
                return str(payload[key])
    return snippet(text)


def listed_models(payload: Any) -> list[str]:
    """Model ids of a GET /models answer ({"object": "list", "data": [{"id": ...}]})."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise EngineError(f"not an OpenAI model list: {snippet(payload)}")
    return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]


def snippet(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.strip() or "(empty)"
    return text if len(text) <= _ERROR_SNIPPET else text[:_ERROR_SNIPPET] + "..."
