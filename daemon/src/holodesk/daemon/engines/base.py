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


@dataclass(frozen=True)
class GenerationResult:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


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
