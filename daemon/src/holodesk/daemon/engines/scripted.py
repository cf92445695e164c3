"""ScriptedEngine: canned model outputs, in order, for tests and demos.

Each output is text in the dialect's format, so a scripted policy
(`ModelPolicy(dialect, ScriptedEngine)`) goes through exactly the parsing and
coordinate mapping a real model does. By default every session replays the
script from its start (sessions are told apart by the request id prefix that
ModelPolicy writes: "<session_id>/<step>/<attempt>"). When a session's script
runs out, the engine answers `exhausted_output`: a Holo-format fail action
unless told otherwise.

With `processes_images=True` it stands in for an in-process engine (vLLM,
transformers): dialects leave the resize to it, and it takes the pixels of each
image it has not processed yet in a worker thread, as vLLM's prompt rendering does
with its processor cache (`processor_cache_items` images by content id: vLLM's
default 4 GiB holds about 256 processed 1080p screens), so a model that answers in
zero time still costs the daemon the image work a real one would (benchmarks).

An output may also be a list of candidates: a request for n completions gets
candidates[0..n-1], repeating the list when it is shorter (a plain string is a
list of one). With logprobs asked for, each completion's tokens are its UTF-8
bytes, each with log-probability 0.0: a script emits its text with certainty.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import OrderedDict, deque
from collections.abc import Sequence
from pathlib import Path

from holodesk.daemon.engines.base import EngineError, GenerationRequest, GenerationResult, Sample

HOLO_EXHAUSTED = json.dumps(
    {
        "note": "",
        "thought": "The script has no more steps.",
        "action": {"action": "fail", "reason": "the script ran out of steps"},
    }
)
_MAX_TRACKED_SESSIONS = 10_000


# One scripted step: an output, or the candidates of a step sampled n times.
ScriptEntry = str | Sequence[str]


class ScriptError(ValueError):
    """A script file that is not a JSON list of strings (or lists of strings)."""


def session_key(request_id: str) -> str:
    return request_id.split("/", 1)[0]


class ScriptedEngine:
    name = "scripted"

    def __init__(
        self,
        outputs: Sequence[ScriptEntry],
        *,
        per_session: bool = True,
        exhausted_output: str = HOLO_EXHAUSTED,
        processes_images: bool = False,
        processor_cache_items: int = 256,
    ) -> None:
        self.processes_images = processes_images
        self._processed = _Processed(processor_cache_items)
        self.outputs = tuple(e if isinstance(e, str) else tuple(e) for e in outputs)
        self._script = tuple(_candidates(entry) for entry in outputs)
        self.per_session = per_session
        self.exhausted_output = exhausted_output
        self._positions: OrderedDict[str, int] = OrderedDict()
        # Recent requests, for tests and debugging.
        self.requests: deque[GenerationRequest] = deque(maxlen=64)
        self.aborted: deque[str] = deque(maxlen=64)

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: object) -> ScriptedEngine:
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ScriptError(f"cannot read script {path}: {exc}") from exc
        if not isinstance(data, list) or not all(_is_entry(x) for x in data):
            raise ScriptError(
                f"{path}: a script is a JSON list of strings, each one model output "
                "(or a non-empty list of strings: the candidates of one step)"
            )
        return cls(data, **kwargs)  # type: ignore[arg-type]

    async def start(self) -> None:
        return None

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        if not request.messages:
            raise EngineError("a generation request needs at least one message")
        self.requests.append(request)
        key = session_key(request.request_id) if self.per_session else ""
        position = self._positions.pop(key, 0)
        self._positions[key] = position + 1
        while len(self._positions) > _MAX_TRACKED_SESSIONS:
            self._positions.popitem(last=False)
        if self.processes_images:
            await asyncio.to_thread(self._processed.take_pixels, request)
        else:
            await asyncio.sleep(0)  # an engine yields to the loop like a real one would
        script = self._script
        entry = script[position] if position < len(script) else (self.exhausted_output,)
        texts = [entry[i % len(entry)] for i in range(request.n)]
        return GenerationResult.of(tuple(_sample(t, request.logprobs) for t in texts))

    async def abort(self, request_id: str) -> None:
        self.aborted.append(request_id)

    async def close(self) -> None:
        return None


class _Processed:
    """Content ids of the images already "processed", least recently used first."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def take_pixels(self, request: GenerationRequest) -> None:
        for message in request.messages:
            for image in message.images:
                if not self._seen(image.content_id):
                    image.pixels()

    def _seen(self, content_id: str) -> bool:
        if not content_id or self.capacity <= 0:
            return False
        with self._lock:
            if content_id in self._ids:
                self._ids.move_to_end(content_id)
                return True
            self._ids[content_id] = None
            while len(self._ids) > self.capacity:
                self._ids.popitem(last=False)
            return False


def _is_entry(value: object) -> bool:
    if isinstance(value, str):
        return True
    return isinstance(value, list) and bool(value) and all(isinstance(x, str) for x in value)


def _candidates(entry: ScriptEntry) -> tuple[str, ...]:
    if isinstance(entry, str):
        return (entry,)
    candidates = tuple(entry)
    if not candidates or not all(isinstance(x, str) for x in candidates):
        raise ScriptError("a script entry is a string or a non-empty list of strings")
    return candidates


def _sample(text: str, logprobs: bool) -> Sample:
    tokens = tuple(text.encode("utf-8"))
    if not logprobs:
        return Sample(text, completion_tokens=len(tokens), finish_reason="stop")
    return Sample(
        text,
        completion_tokens=len(tokens),
        token_ids=tokens,
        token_logprobs=(0.0,) * len(tokens),
        cumulative_logprob=0.0,
        finish_reason="stop",
    )
