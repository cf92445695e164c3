"""VersionedEngine: a test double for the engine only, whose policy version a test bumps.

Why it exists: the tests of what sessions, trajectories, `holodesk run --json`, the
live view and reports make of policy versions need a daemon whose weights change
while sessions run, at steps the test chooses. The real updatable engines (vLLM,
transformers) need a model and seconds per update; this one is the repository's
ScriptedEngine (canned outputs in the dialect's format) that also implements
holodesk.daemon.engines.weights.UpdatableEngine and stamps every sample with the
version serving when it was made, as a real engine does. Everything around it is
real: ModelPolicy, the daemon, gRPC, the client, recordings, the live view.

- `bump()` is what an update does to the version (number + 1, a new label);
  `update_weights` does the same through the protocol's method, for callers that
  go through it (TrainerService); adapters are not supported.
- `straddle_next()` makes the next sample straddle an update, as a KEEP-mode update
  landing mid-sample does: its first half by the serving version, the rest by the
  next one, which then serves.
- `updates={call: "bump" | "straddle"}` does either before the engine's call number
  `call` (0-based), for a test that cannot reach the engine between steps (one
  driving `holodesk run`).
- Each result carries prompt token ids made from the prompt itself (each text
  part's UTF-8 bytes, and IMAGE_TOKEN per image), so a test can tell they are this
  step's prompt.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Literal

from holodesk.daemon.engines.base import (
    GenerationRequest,
    GenerationResult,
    Sample,
    TextPart,
)
from holodesk.daemon.engines.scripted import ScriptedEngine, ScriptEntry
from holodesk.daemon.engines.weights import (
    PolicyVersion,
    UpdateMode,
    UpdateUnsupportedError,
    WeightUpdate,
    next_version,
)
from holodesk.values.generation import VersionSpan

# The id standing for an image in the prompt ids (a real processor repeats its
# placeholder per image token; one is enough to be told apart from text bytes).
IMAGE_TOKEN = 100_000


class VersionedEngine(ScriptedEngine):
    def __init__(
        self,
        outputs: Sequence[ScriptEntry],
        *,
        version: int = 1,
        updates: Mapping[int, Literal["bump", "straddle"]] | None = None,
    ) -> None:
        super().__init__(outputs)
        self._version = PolicyVersion(version, label=label_of(version))
        self._straddle = False
        self._updates = dict(updates or {})
        self._calls = 0

    @property
    def policy_version(self) -> PolicyVersion:
        return self._version

    @property
    def updating(self) -> bool:
        return False

    def bump(self) -> PolicyVersion:
        """The next version serves from now on (what a finished update does)."""
        number = self._version.number + 1
        self._version = PolicyVersion(number, label=label_of(number))
        return self._version

    def straddle_next(self) -> None:
        """The next sample's tokens come half from this version, half from the next."""
        self._straddle = True

    async def update_weights(
        self, checkpoint: Path, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        started = time.monotonic()
        previous = self._version
        number = next_version(previous, version)
        self._version = PolicyVersion(number, label=label or label_of(number))
        return WeightUpdate(self._version, previous, mode, 0.0, time.monotonic() - started)

    async def load_adapter(
        self, adapter: Path, name: str, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        raise UpdateUnsupportedError("the test engine serves no adapters")

    async def unload_adapter(
        self, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        raise UpdateUnsupportedError("the test engine serves no adapters")

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        update = self._updates.get(self._calls)
        self._calls += 1
        if update == "bump":
            self.bump()
        elif update == "straddle":
            self.straddle_next()
        result = await super().generate(request)
        samples = tuple(self._stamped(sample) for sample in result.all_samples)
        ids = prompt_ids(request)
        return GenerationResult.of(samples, prompt_tokens=len(ids), prompt_token_ids=ids)

    def _stamped(self, sample: Sample) -> Sample:
        count = sample.completion_tokens
        first = self._version.number
        if not self._straddle:
            return replace(sample, versions=(VersionSpan(first, 0, count),))
        self._straddle = False
        second = self.bump().number
        half = count // 2
        spans = (VersionSpan(first, 0, half), VersionSpan(second, half, count))
        return replace(sample, versions=spans)


def label_of(version: int) -> str:
    return f"step-{version * 10}"


def prompt_ids(request: GenerationRequest) -> tuple[int, ...]:
    """The prompt's ids as this engine "tokenizes" it: text bytes, IMAGE_TOKEN per image."""
    ids: list[int] = []
    for message in request.messages:
        for part in message.content:
            if isinstance(part, TextPart):
                ids.extend(part.text.encode("utf-8"))
            else:
                ids.append(IMAGE_TOKEN)
    return tuple(ids)
