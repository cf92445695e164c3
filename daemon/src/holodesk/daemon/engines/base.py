"""The narrow protocol between a ModelPolicy and whatever generates text.

A dialect turns a session into a `GenerationRequest` (chat messages with images
and an optional JSON schema); an engine turns that into text. Engines know
nothing about sessions, desktops or coordinates, so vLLM, an OpenAI-compatible
server, transformers, a scripted list of outputs and the OCR baseline are
interchangeable.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from PIL import Image

from holodesk.daemon.frames import ImageEncoding
from holodesk.values.generation import VersionSpan


@dataclass(frozen=True, eq=False)
class ImagePart:
    """An image as the model will see it: `width` x `height` is the image its vision
    tower gets, the size the dialect's coordinates and prompt refer to.

    Held as bytes (`data`: a frame passed through as it arrived), as pixels
    (`image`), or made on demand by a `loader` (the daemon's model images: pixels
    only when an engine asks, so an engine that already processed this content, as
    vLLM's processor cache by `content_id`, never makes the daemon decode it again).
    In-process engines (vLLM, transformers) take pixels and remote ones bytes; each
    form is made from the other only when asked for, so a resized image is never
    PNG-encoded only for vLLM to decode it again (~80 + ~40 ms of CPU per 2048x1024
    image). The pixels may be another size than `width` x `height` when they are
    left for an engine whose own image processor resizes them (see
    `Engine.processes_images`); bytes are always made at the model's size. Parts
    compare by identity: pixels make a poor equality key.
    """

    data: bytes
    mime_type: str
    width: int
    height: int
    image: Image.Image | None = field(default=None, repr=False)
    # For lossy mime types, when bytes are made from pixels.
    quality: int = 90
    # Names exactly these pixels (a digest of the frame, and of the resize when the
    # daemon resized it): an engine that keeps work across requests keys on it, e.g.
    # vLLM's multi_modal_uuids, which spares it hashing every image of every prompt.
    # Empty: unknown.
    content_id: str = ""
    # Makes the pixels on demand (each call: a loaded image is not kept, so the part
    # holds no more memory than `nbytes` says), from `source` (the encoded frame).
    loader: Callable[[], Image.Image] | None = field(default=None, repr=False)
    source: bytes = field(default=b"", repr=False)
    # The daemon resized the frame to width x height for these pixels; False: they are
    # the frame as sent (recorded with the prompt: what a trainer hands the processor).
    resized: bool = False

    @classmethod
    def of_pixels(cls, image: Image.Image, mime_type: str, quality: int = 90) -> ImagePart:
        rgb = image if image.mode == "RGB" else image.convert("RGB")
        return cls(b"", mime_type, image.width, image.height, rgb, quality)

    @property
    def nbytes(self) -> int:
        """Memory it holds: bytes, the RGB pixels, the frame its loader reads (shared
        with the session's window while the frame is in it)."""
        pixels = 0 if self.image is None else self.image.width * self.image.height * 3
        return len(self.data) + len(self.source) + pixels

    def pixels(self) -> Image.Image:
        """The RGB image, made when the part holds none (decoded, or by the loader);
        it may be another size than the model's, for the engine's processor to resize.
        OSError/ValueError if the bytes are not an image."""
        if self.image is not None:
            return self.image
        if self.loader is not None:
            return self.loader()
        with Image.open(io.BytesIO(self.data)) as opened:
            return opened.convert("RGB")

    def encoded(self) -> bytes:
        """The bytes in `mime_type` at the model's size (encoded, once, when the part
        holds no bytes)."""
        return self.data if self.data else self._encoded_pixels

    @functools.cached_property
    def _encoded_pixels(self) -> bytes:
        image = self.pixels()
        if image.size != (self.width, self.height):
            # A remote engine gets the model's image, whatever its server would do.
            image = image.resize((self.width, self.height), Image.Resampling.BICUBIC)
        encoding = ImageEncoding(self.mime_type.removeprefix("image/"))
        buffer = io.BytesIO()
        if encoding is ImageEncoding.PNG:
            # Fast zlib: a remote engine decodes it right away (level 1 took ~1/3
            # less CPU than the default on 1080p screens, for no more bytes).
            image.save(buffer, "PNG", compress_level=1)
        else:
            image.save(buffer, encoding.pillow_format, quality=self.quality)
        return buffer.getvalue()


@dataclass(frozen=True)
class TextPart:
    text: str


ContentPart = TextPart | ImagePart


@dataclass(frozen=True)
class ToolCall:
    """One call of a function tool, as the model (or the server) wrote it: `arguments`
    is the JSON text of the arguments, kept as text so that a malformed one reaches
    the dialect's parser (and its error path) rather than failing in an engine."""

    name: str
    arguments: str
    id: str = ""


@dataclass(frozen=True)
class ToolUse:
    """The function tools a request offers the model, as data.

    `tools` are OpenAI function specs ({"type": "function", "function": {name,
    description, parameters, strict}}): the openai engine sends them as `tools`, the
    in-process engines render them with the chat template's `tools` argument.
    `choice`: "required" forces a call (vLLM constrains decoding to the parser's
    tool-call syntax), "auto" lets the model write text instead. `parser`: the vLLM
    tool-call parser that reads the model's own syntax in process (the one `vllm
    serve --tool-call-parser` would be given). `parallel`: several calls per answer.
    A request with tools is answered with `tool_reply.reply_text` (engines/tool_reply).
    """

    tools: tuple[dict[str, Any], ...]
    choice: Literal["auto", "required"] = "required"
    parser: str = "hermes"
    parallel: bool = False


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["system", "user", "assistant", "tool"]
    content: tuple[ContentPart, ...]
    # An assistant turn's tool calls (its content is then what it wrote besides).
    tool_calls: tuple[ToolCall, ...] = ()
    # A tool turn: the id of the call whose result it carries.
    tool_call_id: str = ""

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
    # Function tools offered to the model; the answer's text is then a tool reply
    # (engines/tool_reply.py), whatever the engine.
    tools: ToolUse | None = None

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
    # Which policy version sampled which tokens (engines whose weights can change,
    # engines/weights.py); empty from an engine without versions.
    versions: tuple[VersionSpan, ...] = ()


@dataclass(frozen=True)
class GenerationResult:
    """`text` is the first sample's, for callers that ask for one; `samples` holds all
    n (empty from an engine that only sets text); `completion_tokens` counts the
    tokens generated for the whole request, every sample's."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    samples: tuple[Sample, ...] = ()
    # The prompt as token ids exactly as the model saw them (image placeholders
    # included); empty from an engine that gives none (a remote server).
    prompt_token_ids: tuple[int, ...] = ()
    # What the serving weights are called, from an engine that is not an
    # UpdatableEngine but can ask its server (engines/remote_version.py); the
    # samples' versions carry the number.
    policy_label: str = ""

    @classmethod
    def of(
        cls,
        samples: tuple[Sample, ...],
        prompt_tokens: int = 0,
        prompt_token_ids: tuple[int, ...] = (),
    ) -> GenerationResult:
        if not samples:
            raise ValueError("a generation result needs at least one sample")
        generated = sum(s.completion_tokens for s in samples)
        return cls(samples[0].text, prompt_tokens, generated, samples, prompt_token_ids)

    @property
    def all_samples(self) -> tuple[Sample, ...]:
        """Every sample; a text-only result counts as one sample without logprobs."""
        return self.samples or (Sample(self.text, self.completion_tokens),)


class EngineError(Exception):
    """The engine could not produce text (not a parse error: those are the dialect's)."""


@runtime_checkable
class Engine(Protocol):
    name: str
    # True when the engine runs the model's own image processor on the pixels it is
    # given (in-process vLLM and transformers): a dialect whose coordinates do not
    # depend on the image's size then leaves the resize to it, and the image is
    # resampled once instead of twice (the daemon's resize was ~40% of its CPU per
    # 1080p step, and the processor resized the result again).
    processes_images: bool

    async def start(self) -> None:
        """Load weights or connect; the daemon reports SERVING only after this returns."""

    async def generate(self, request: GenerationRequest) -> GenerationResult: ...

    async def abort(self, request_id: str) -> None:
        """Stop work on a request whose session was cancelled or disconnected."""

    async def close(self) -> None: ...
