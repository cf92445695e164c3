"""What a model generated for one session step: the values shared by policies
(which fill them), the contract converter (Actions.generation) and recordings.

A policy without a model (scripted, OCR) leaves Decision.generation empty.
"""

from __future__ import annotations

from dataclasses import dataclass

from holodesk.daemon.engines.base import ChatMessage

# The daemon's bounds on what a session may ask (SessionStart.sampling): the
# contract's, defined once in holodesk.proto.limits (re-exported for the daemon).
from holodesk.proto.limits import MAX_CANDIDATES as MAX_CANDIDATES
from holodesk.proto.limits import MAX_SAMPLED_TOKENS as MAX_SAMPLED_TOKENS


@dataclass(frozen=True)
class SessionSampling:
    """Per-session sampling asked for in SessionStart; None takes the policy's default."""

    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    # Completions sampled per step; the policy acts on the first that parses.
    candidates: int = 1
    logprobs: bool = False
    max_tokens: int | None = None


@dataclass(frozen=True)
class Candidate:
    """One sampled completion, exactly as generated."""

    text: str
    # Filled only when logprobs were asked for and the engine gives them.
    token_ids: tuple[int, ...] = ()
    token_logprobs: tuple[float, ...] = ()
    cumulative_logprob: float | None = None
    # Empty when the dialect parsed it.
    parse_error: str = ""

    @property
    def parsed(self) -> bool:
        return not self.parse_error


@dataclass(frozen=True)
class StepGeneration:
    # The prompt exactly as handed to the engine (images as the model sees them).
    messages: tuple[ChatMessage, ...]
    # Every candidate of the step in sampling order, repair retries included.
    candidates: tuple[Candidate, ...]
    # Index of the candidate the actions came from; None when none parsed.
    chosen: int | None
    prompt_tokens: int = 0
    engine_seconds: float = 0.0
    # Summed over every candidate (the engines' GenerationResult.completion_tokens).
    completion_tokens: int = 0
