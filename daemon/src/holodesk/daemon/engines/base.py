"""The narrow protocol between a ModelPolicy and whatever generates text.

A dialect turns a session into a `GenerationRequest` (chat messages with images
and an optional JSON schema); an engine turns that into text. Engines know
nothing about sessions, desktops or coordinates, so vLLM, an OpenAI-compatible
server, transformers, a scripted list of outputs and the OCR baseline are
interchangeable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable


@dataclass(frozen=True)
class ImagePart:
    """An image exactly as the model will see it (already resized by the dialect)."""

    data: bytes
    mime_type: str
    width: int
    height: int


@dataclass(frozen=True)
class TextPart:
    text: str


ContentPart = TextPart | ImagePart


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["system", "user", "assistant"]
    content: tuple[ContentPart, ...]

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def images(self) -> tuple[ImagePart, ...]:
        return tuple(p for p in self.content if isinstance(p, ImagePart))


@dataclass(frozen=True)
class SamplingParams:
    max_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None


@dataclass(frozen=True)
class GenerationRequest:
    request_id: str
    messages: tuple[ChatMessage, ...]
    sampling: SamplingParams = field(default_factory=SamplingParams)
    # JSON schema for structured decoding; engines that cannot enforce it ignore it,
    # and the dialect's parser still validates the output.
    json_schema: dict[str, Any] | None = None
    # Completions to sample from the same prompt (n > 1 needs temperature > 0).
    n: int = 1
    # Return each sampled token's log-probability (and id, where the engine gives ids).
    logprobs: bool = False

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n must be at least 1, got {self.n}")
        if self.n > 1 and self.sampling.temperature <= 0:
            # vLLM and transformers refuse it: greedy decoding gives n identical texts.
            raise ValueError(f"n={self.n} completions need a temperature above 0")


@dataclass(frozen=True)
class Sample:
    """One sampled completion. With logprobs asked for, token_logprobs has one
    entry per generated token and token_ids the same count, or is empty where
    the engine gives no ids (OpenAI's API does not)."""

    text: str
    completion_tokens: int = 0
    token_ids: tuple[int, ...] = ()
    token_logprobs: tuple[float, ...] = ()
    # Sum of token_logprobs; None without logprobs.
    cumulative_logprob: float | None = None
    finish_reason: str | None = None


@dataclass(frozen=True)
class GenerationResult:
    """`text` is the first sample's, for callers that ask for one; `samples` holds all
    n (empty from an engine that only sets text); `completion_tokens` counts the
    tokens generated for the whole request, every sample's."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    samples: tuple[Sample, ...] = ()

    @classmethod
    def of(cls, samples: tuple[Sample, ...], prompt_tokens: int = 0) -> GenerationResult:
        if not samples:
            raise ValueError("a generation result needs at least one sample")
        generated = sum(s.completion_tokens for s in samples)
        return cls(samples[0].text, prompt_tokens, generated, samples)

    @property
    def all_samples(self) -> tuple[Sample, ...]:
        """Every sample; a text-only result counts as one sample without logprobs."""
        return self.samples or (Sample(self.text, self.completion_tokens),)


class EngineError(Exception):
    """The engine could not produce text (not a parse error: those are the dialect's)."""


@runtime_checkable
class Engine(Protocol):
    name: str

    async def start(self) -> None:
        """Load weights or connect; the daemon reports SERVING only after this returns."""

    async def generate(self, request: GenerationRequest) -> GenerationResult: ...

    async def abort(self, request_id: str) -> None:
        """Stop work on a request whose session was cancelled or disconnected."""

    async def close(self) -> None: ...
