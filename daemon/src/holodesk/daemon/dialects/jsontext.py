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

_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_HINT = "Answer with exactly one JSON object and nothing else."
# Control characters (a raw newline, tab, U+0016...) inside strings are read as they
# are: models write them, and vLLM's structured decoding (xgrammar) lets them through
# in schema-constrained strings, so strict JSON would refuse a schema-valid answer.
_DECODER = json.JSONDecoder(strict=False)


def strip_reasoning(text: str) -> str:
    """The text without <think>...</think> blocks. Linear time: a lazy regex over
    the blocks is quadratic on text full of unclosed <think> tags."""
    kept: list[str] = []
    pos = 0
    while (opening := _THINK_OPEN.search(text, pos)) is not None:
        closing = _THINK_CLOSE.search(text, opening.end())
        if closing is None:
            break  # no later <think> can be closed either
        kept.append(text[pos : opening.start()])
        pos = closing.end()
    kept.append(text[pos:])
    text = "".join(kept)
    # A closing tag without its opening one (the template opened it): keep what follows.
    closings = [m.end() for m in _THINK_CLOSE.finditer(text)]
    if closings:
        text = text[closings[-1] :]
    return text.strip()


def _loads(candidate: str) -> Any:
    try:
        return _DECODER.decode(candidate)
    except (ValueError, RecursionError):
        # ValueError covers JSONDecodeError and over-long integer literals.
        return None


def _scan(text: str) -> dict[str, Any] | None:
    decoder = _DECODER
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
    # The whole text first: a schema-constrained answer is one object, and its strings
    # may hold anything, "</think>" included, which stripping reasoning would cut.
    whole = _loads(text.strip())
    if isinstance(whole, dict):
        return whole
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
