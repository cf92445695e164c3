"""Model sampling a session asks for, and what the model generated at each step.

`Sampling` goes out in SessionStart.sampling; `Generation` comes back with every
Actions message of a model policy (policies without a model send none). Values
only: convert.py maps them to and from the contract.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_MAX_SEED = 2**64 - 1


@dataclass(frozen=True)
class Sampling:
    """Per-session sampling; None takes the daemon policy's default.

    `candidates` completions are sampled per step and the policy acts on the first
    that parses (more than 1 needs a temperature above 0, or none: the daemon then
    samples at 1.0). `seed` makes sampling repeatable on engines that take seeds.
    `logprobs` asks for each sampled token's log-probability (and id, where the
    engine gives ids). The daemon enforces its own bounds (candidates, max_tokens).
    """

    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    candidates: int = 1
    logprobs: bool = False
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.temperature is not None and not (
            math.isfinite(self.temperature) and self.temperature >= 0
        ):
            raise ValueError(f"temperature must be 0 or more, got {self.temperature}")
        if self.top_p is not None and not (math.isfinite(self.top_p) and 0 < self.top_p <= 1):
            raise ValueError(f"top_p must be above 0 and at most 1, got {self.top_p}")
        if self.seed is not None and not 0 <= self.seed <= _MAX_SEED:
            raise ValueError(f"seed must be 0 to 2**64-1, got {self.seed}")
        if self.candidates < 1:
            raise ValueError(f"candidates must be 1 or more, got {self.candidates}")
        if self.candidates > 1 and self.temperature == 0:
            raise ValueError(f"{self.candidates} candidates need a temperature above 0")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be 1 or more, got {self.max_tokens}")


@dataclass(frozen=True)
class Completion:
    """One sampled completion of a step, exactly as the model wrote it."""

    text: str
    # With Sampling.logprobs: one log-probability per generated token; ids where the
    # engine gives them (an OpenAI-compatible server gives none: then empty).
    token_ids: tuple[int, ...] = ()
    token_logprobs: tuple[float, ...] = ()
    cumulative_logprob: float | None = None
    parsed: bool = True
    parse_error: str = ""


@dataclass(frozen=True)
class Generation:
    """Every completion of a step (`Sampling.candidates` per model call, repair
    calls included, in order) and the index of the one the actions came from."""

    completions: tuple[Completion, ...]
    chosen: int = 0
    prompt_tokens: int = 0
    engine_seconds: float = 0.0

    @property
    def chosen_completion(self) -> Completion | None:
        if 0 <= self.chosen < len(self.completions):
            return self.completions[self.chosen]
        return None
