"""ScriptedEngine: canned model outputs, in order, for tests and demos.

Each output is text in the dialect's format, so a scripted policy
(`ModelPolicy(dialect, ScriptedEngine)`) goes through exactly the parsing and
coordinate mapping a real model does. By default every session replays the
script from its start (sessions are told apart by the request id prefix that
ModelPolicy writes: "<session_id>/<step>/<attempt>"). When a session's script
runs out, the engine answers `exhausted_output`: a Holo-format fail action
unless told otherwise.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict, deque
from collections.abc import Sequence
from pathlib import Path

from holodesk.daemon.engines.base import EngineError, GenerationRequest, GenerationResult

HOLO_EXHAUSTED = json.dumps(
    {
        "note": "",
        "thought": "The script has no more steps.",
        "action": {"action": "fail", "reason": "the script ran out of steps"},
    }
)
_MAX_TRACKED_SESSIONS = 10_000


class ScriptError(ValueError):
    """A script file that is not a JSON list of strings."""


def session_key(request_id: str) -> str:
    return request_id.split("/", 1)[0]


class ScriptedEngine:
    name = "scripted"

    def __init__(
        self,
        outputs: Sequence[str],
        *,
        per_session: bool = True,
        exhausted_output: str = HOLO_EXHAUSTED,
    ) -> None:
        self.outputs = tuple(outputs)
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
        if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
            raise ScriptError(f"{path}: a script is a JSON list of strings, each one model output")
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
        await asyncio.sleep(0)  # an engine yields to the loop like a real one would
        if position < len(self.outputs):
            return GenerationResult(text=self.outputs[position])
        return GenerationResult(text=self.exhausted_output)

    async def abort(self, request_id: str) -> None:
        self.aborted.append(request_id)

    async def close(self) -> None:
        return None
