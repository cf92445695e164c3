"""The OpenAI chat-completions wire format: request bodies out, answers in.

Pure functions, no I/O, so the encoding (base64 of every image, a few MB of
JSON per step) can run in a worker thread, off the event loop.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from holodesk.daemon.engines.base import (
    ChatMessage,
    EngineError,
    GenerationRequest,
    GenerationResult,
    ImagePart,
    TextPart,
)

_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]+")
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
    return f"data:{image.mime_type};base64,{base64.b64encode(image.data).decode('ascii')}"


def message_json(message: ChatMessage) -> dict[str, Any]:
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


def parse_completion(payload: Any) -> GenerationResult:
    """The first choice's text and the token counts of a chat.completion object."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise EngineError(f"the answer has no choices: {snippet(payload)}")
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        refusal = message.get("refusal") if isinstance(message, dict) else None
        why = f"the model refused: {refusal}" if refusal else "the answer has no text content"
        raise EngineError(f"{why}: {snippet(choices[0])}")
    usage = payload.get("usage")
    return GenerationResult(
        text=content,
        prompt_tokens=_usage_count(usage, "prompt_tokens"),
        completion_tokens=_usage_count(usage, "completion_tokens"),
    )


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
