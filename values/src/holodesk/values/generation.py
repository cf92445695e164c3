"""Model sampling a session asks for, and one completion the model wrote: the
contract's SamplingParams and Completion as plain values.

The client builds a `Sampling` for SessionStart.sampling and the daemon reads one
back from it; the daemon's policies fill a `Completion` per sampled candidate and the
client reads each back from Actions.generation. Both sides held the same fields under
two names each (client Sampling/Completion, daemon SessionSampling/Candidate); one
definition here means a field added to the contract is added once.

What is *not* here, because the two sides truly differ: a whole step's generation.
The daemon's StepGeneration keeps the prompt exactly as handed to its engine (images
included), a `chosen` that is None when nothing parsed and the completion tokens its
metrics count; none of that goes on the wire. The client's Generation is what the
wire carries (`chosen` a plain index). Each side defines its own.
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
    engine gives ids); `prompt_token_ids` for each step's prompt as token ids (what
    an RL trainer trains on). These checks hold on both sides; the daemon enforces its own
    bounds on top (holodesk.proto.limits: candidates, max_tokens) and names the
    offending wire field when it refuses one.
    """

    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    candidates: int = 1
    logprobs: bool = False
    max_tokens: int | None = None
    # Keep each step's prompt as token ids, exactly as the engine saw them.
    prompt_token_ids: bool = False

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
class VersionSpan:
    """Tokens [start, end) of a completion, sampled by policy version `version` (the
    daemon's PolicyVersion.number). A completion generated while the weights changed
    under it (an update in mode KEEP) has several, in token order."""

    version: int
    start: int
    end: int

    def __post_init__(self) -> None:
        if self.version < 0 or not 0 <= self.start <= self.end:
            raise ValueError(f"a version span needs 0 <= start <= end, got {self}")


@dataclass(frozen=True)
class Completion:
    """One sampled completion of a step, exactly as the model wrote it."""

    text: str
    # With Sampling.logprobs: one log-probability per generated token; ids where the
    # engine gives them (an OpenAI-compatible server gives none: then empty).
    token_ids: tuple[int, ...] = ()
    token_logprobs: tuple[float, ...] = ()
    cumulative_logprob: float | None = None
    # Why the dialect could not parse it; empty when it did.
    parse_error: str = ""
    # Which policy version sampled which tokens; empty from a policy without versions.
    versions: tuple[VersionSpan, ...] = ()

    @property
    def parsed(self) -> bool:
        """Whether the dialect parsed it: the wire's Completion.parsed."""
        return not self.parse_error

    @property
    def policy_version(self) -> int:
        """The newest version that sampled any of its tokens (0: none known)."""
        return max((span.version for span in self.versions), default=0)
