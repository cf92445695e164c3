"""Weights that change while sessions run: what an in-process engine offers an RL
trainer (TrainerService, trainer.proto), apart from the 4-method Engine seam.

An engine that can swap its weights implements `UpdatableEngine` besides `Engine`;
the daemon asks `isinstance(engine, UpdatableEngine)` and answers
FAILED_PRECONDITION for one that cannot (a remote OpenAI-compatible server, whose
trainer updates that server itself). Why a second protocol and not more Engine
methods: scripted, OCR and remote engines have nothing to swap, and the four
methods every engine needs stay four.

The rules every implementation keeps:
- The old weights keep serving after any failure: a checkpoint is checked
  (names, shapes, architecture: engines/checkpoint.py) before a byte of it is
  loaded, and a second update while one runs is refused (`UpdateBusyError`).
- No request in flight is lost, whatever the mode: KEEP freezes them and they
  finish on the new weights (their samples carry two `VersionSpan`s), WAIT lets
  them finish on the old ones first, ABORT stops them and runs them again from
  their first token on the new weights, inside `generate()`, so its caller sees
  one answer of one version.
- An update is proven, not assumed: the engine's worker fingerprints its own
  tensors after the load (`weights_checksum`), and an update after which the
  fingerprint did not change fails with `UpdateIneffectiveError` (a transport that
  silently did nothing, as vLLM's NCCL one off CUDA).
- Every sample says which version made which of its tokens (`Sample.versions`),
  and no prefix cache entry of one version serves another (reset or salted).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from holodesk.daemon.engines.base import EngineError
from holodesk.values.generation import VersionSpan


class UpdateMode(enum.Enum):
    KEEP = "keep"
    WAIT = "wait"
    ABORT = "abort"


@dataclass(frozen=True)
class PolicyVersion:
    """Which weights serve: `number` increases with every change (0: as started)."""

    number: int = 0
    label: str = ""
    # The LoRA adapter served through; empty: the base weights.
    adapter: str = ""
    # "sha256:<hex>" of the engine's own tensors (`weights_checksum`); empty: unknown.
    checksum: str = ""


@dataclass(frozen=True)
class WeightUpdate:
    """What one update did."""

    version: PolicyVersion
    previous: PolicyVersion
    mode: UpdateMode
    # How long the engine generated nothing.
    paused_seconds: float
    # The whole update, checks included.
    seconds: float
    # Requests in flight when generation paused, and those run again (ABORT).
    requests_in_flight: int = 0
    requests_retried: int = 0


class WeightUpdateError(EngineError):
    """An update refused or failed; the old weights still serve."""


class CheckpointNotFoundError(WeightUpdateError):
    """The checkpoint or adapter folder does not exist (NOT_FOUND)."""


class CheckpointInvalidError(WeightUpdateError):
    """Half-written, another architecture or shape, an adapter for another base, a
    version not above the serving one (INVALID_ARGUMENT)."""


class UpdateBusyError(WeightUpdateError):
    """Another update of this engine is running (ABORTED)."""


class UpdateIneffectiveError(WeightUpdateError):
    """The load ran and the engine's weights did not change (FAILED_PRECONDITION)."""


class UpdateUnsupportedError(WeightUpdateError):
    """This engine (or its configuration) cannot do it (FAILED_PRECONDITION)."""


class EngineClosingError(WeightUpdateError):
    """The engine is shutting down (UNAVAILABLE)."""


@runtime_checkable
class UpdatableEngine(Protocol):
    @property
    def policy_version(self) -> PolicyVersion:
        """The version serving now."""
        ...

    @property
    def updating(self) -> bool:
        """An update is in progress."""
        ...

    async def update_weights(
        self, checkpoint: Path, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        """Load a checkpoint folder of the serving architecture; `version` 0 is the
        serving one plus 1 (a lower or equal one is CheckpointInvalidError)."""
        ...

    async def load_adapter(
        self, adapter: Path, name: str, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        """Serve through a PEFT LoRA adapter of this base model from now on."""
        ...

    async def unload_adapter(
        self, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        """Serve the base weights again (CheckpointInvalidError when no adapter serves)."""
        ...


def next_version(serving: PolicyVersion, asked: int) -> int:
    """The number of the version an update makes: `asked`, or the serving one + 1."""
    if asked == 0:
        return serving.number + 1
    if asked <= serving.number:
        raise CheckpointInvalidError(
            f"version {asked} is not above the serving version {serving.number}: "
            "versions only increase (0 takes the next one)"
        )
    return asked


def version_spans(changes: list[tuple[int, int]], token_count: int) -> tuple[VersionSpan, ...]:
    """The spans of a sample of `token_count` tokens, from the (first token position,
    version) at which each version started sampling it, in order: [(0, 3), (5, 4)]
    over 9 tokens is tokens 0-4 by version 3, 5-8 by version 4. A version under
    which no token was sampled (a change before the first token) leaves no span."""
    spans: list[VersionSpan] = []
    for index, (start, version) in enumerate(changes):
        end = changes[index + 1][0] if index + 1 < len(changes) else token_count
        end = min(end, token_count)
        if end > start:
            spans.append(VersionSpan(version, start, end))
    return tuple(spans)
