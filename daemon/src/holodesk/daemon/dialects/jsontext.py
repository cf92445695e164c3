"""Find the JSON object in a model's free text.

Models wrap their JSON in reasoning (<think>...</think>), code fences or prose.
Everything here raises DialectParseError and nothing else, whatever the text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from holodesk.daemon.dialects.base import DialectParseError

MAX_OUTPUT_CHARS = 200_000
# Bounds the work spent on text full of braces.
_MAX_CANDIDATES = 64

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_HINT = "Answer with exactly one JSON object and nothing else."


def strip_reasoning(text: str) -> str:
    text = _THINK.sub("", text)
    # An unclosed <think> block followed by a closing tag elsewhere: keep what follows.
    closing = text.lower().rfind("</think>")
    if closing >= 0:
        text = text[closing + len("</think>") :]
    return text.strip()


def _loads(candidate: str) -> Any:
    try:
        return json.loads(candidate)
    except (ValueError, RecursionError):
        # ValueError covers JSONDecodeError and over-long integer literals.
        return None


def _scan(text: str) -> dict[str, Any] | None:
    decoder = json.JSONDecoder()
    start = text.find("{")
    tries = 0
    while start >= 0 and tries < _MAX_CANDIDATES:
        tries += 1
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def extract_object(text: str) -> dict[str, Any]:
    """The first JSON object in the text (whole text, fenced block, or embedded)."""
    if not isinstance(text, str):
        raise DialectParseError(f"model output is {type(text).__name__}, not text", _HINT)
    if len(text) > MAX_OUTPUT_CHARS:
        raise DialectParseError(f"model output is {len(text)} characters long", _HINT)
    body = strip_reasoning(text)
    if not body:
        raise DialectParseError("model output is empty", _HINT)
    whole = _loads(body)
    if isinstance(whole, dict):
        return whole
    for fenced in _FENCE.findall(body):
        value = _loads(fenced.strip())
        if isinstance(value, dict):
            return value
    found = _scan(body)
    if found is not None:
        return found
    raise DialectParseError("no JSON object found in the model output", _HINT)
