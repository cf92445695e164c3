"""ModelPolicy: a Dialect (prompt, parsing, coordinates) + an Engine (text).

Each step builds the prompt from the dialect's templates and the session's
encoded history, asks the engine, and parses. An unusable answer is retried
with the parse error's repair hint appended (the dialect's `parse_retries`,
2 by default); when every attempt fails, the decision is a Fail action, so the
session ends cleanly as FAILED with the reason naming the parse error.

Request ids are "<session_id>/<step>/<attempt>" ("locate-<id>-<n>/1/0" for Locate):
the part before the first "/" names the conversation.

Per-session sampling (StepContext.sampling) overrides the dialect's defaults.
Each model call samples `candidates` completions; the step acts on the first
that parses, and only when none does is the call repeated with the repair hint
(about the first candidate). Every candidate of every call goes into the
decision's StepGeneration, `candidates` per call, in order. A session's seed
gives each call its own seed, derived from (seed, step, attempt): the same seed
repeats a session's sampling, and no two steps reuse the same random draws.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from holodesk.daemon.actions import Fail
from holodesk.daemon.dialects import Dialect, DialectParseError
from holodesk.daemon.dialects.base import ParsedStep
from holodesk.daemon.dialects.images import PixelLookup
from holodesk.daemon.engines.base import (
    ChatMessage,
    Engine,
    EngineError,
    GenerationRequest,
    GenerationResult,
    ImagePart,
    Sample,
    SamplingParams,
    ToolUse,
)
from holodesk.daemon.engines.weights import UpdatableEngine
from holodesk.daemon.frames import EncodedFrame, FrameSpec, ImageEncoding
from holodesk.daemon.generation import Completion, PromptImageRef, Sampling, StepGeneration
from holodesk.daemon.geometry import Size
from holodesk.daemon.policies.base import Decision, Location, Pinning
from holodesk.daemon.policies.image_cache import ModelImageCache
from holodesk.daemon.steps import StepContext

log = logging.getLogger(__name__)

# Several candidates at the dialect's greedy default would be n identical texts.
CANDIDATES_TEMPERATURE = 1.0


@dataclass(frozen=True)
class StepSampling:
    """How one step samples: the dialect's defaults, overridden by the session's."""

    params: SamplingParams
    n: int = 1
    logprobs: bool = False
    # The session's seed, from which each call's seed is derived.
    seed: int | None = None

    @classmethod
    def of(cls, defaults: SamplingParams, session: Sampling | None) -> StepSampling:
        if session is None:
            return cls(defaults)
        n = max(1, session.candidates)
        temperature = defaults.temperature if session.temperature is None else session.temperature
        if n > 1 and session.temperature is None and temperature <= 0:
            temperature = CANDIDATES_TEMPERATURE
        params = SamplingParams(
            max_tokens=session.max_tokens or defaults.max_tokens,
            temperature=temperature,
            top_p=defaults.top_p if session.top_p is None else session.top_p,
            seed=defaults.seed,
        )
        return cls(params, n, session.logprobs, session.seed)

    def for_call(self, step: int, attempt: int) -> SamplingParams:
        if self.seed is None:
            return self.params
        return replace(self.params, seed=call_seed(self.seed, step, attempt))


def call_seed(seed: int, step: int, attempt: int) -> int:
    """A seed per model call, 31 bits: every engine takes it (numpy wants 32 bits, and
    vLLM seeds the i-th of n samples with seed + i)."""
    digest = hashlib.blake2b(f"{seed}/{step}/{attempt}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") >> 1


class ModelPolicy:
    def __init__(
        self,
        dialect: Dialect,
        engine: Engine,
        *,
        name: str | None = None,
        description: str | None = None,
        parse_retries: int | None = None,
        image_cache: ModelImageCache | None = None,
    ) -> None:
        self.dialect = dialect
        self.engine = engine
        self.name = name or f"{engine.name}-{dialect.name}"
        self.description = description or f"{engine.name} engine, {dialect.name} dialect"
        self.parse_retries = dialect.spec.parse_retries if parse_retries is None else parse_retries
        self._ready = False
        self._inflight: dict[str, str] = {}
        self.image_cache = image_cache or ModelImageCache()

    @property
    def ready(self) -> bool:
        return self._ready

    @property
    def history_frames(self) -> int:
        # The most a prompt shows: the append layout's windows grow past the average.
        return self.dialect.spec.frames_kept

    def frame_spec(
        self, accepted: tuple[ImageEncoding, ...], screen: Size | None = None
    ) -> FrameSpec:
        # Given the screen, the box shrinks to what the model sees: no sent pixel is wasted.
        return self.dialect.frame_spec(accepted, screen)

    async def start(self) -> None:
        await self.engine.start()
        self._ready = True

    async def decide(self, context: StepContext) -> Decision:
        geometry = self.dialect.geometry(context.frame.size)
        shown, images = self._model_images(context)
        messages = self.dialect.step_messages(context, images)
        sampling = StepSampling.of(self.dialect.sampling(), context.sampling)
        record = _Record(
            messages,
            frame_ids={
                id(image): frame.frame_id for frame, image in zip(shown, images, strict=True)
            },
            keep_prompt_ids=context.sampling is not None and context.sampling.prompt_token_ids,
        )
        attempts = 1 + self.parse_retries
        error: DialectParseError | None = None
        text = ""
        for attempt in range(attempts):
            request_id = f"{context.session_id}/{context.step}/{attempt}"
            request = self._request(
                request_id,
                messages,
                self.dialect.step_schema(geometry),
                sampling,
                context.step,
                attempt,
                tools=self.dialect.tool_use(),
            )
            started = time.perf_counter()
            try:
                result = await self._generate(context.session_id, request)
            except EngineError as exc:
                log.warning("engine %s failed on %s: %s", self.engine.name, request_id, exc)
                reason = f"engine {self.engine.name} failed: {exc}"
                record.engine_seconds += time.perf_counter() - started
                return Decision(
                    (Fail(reason),), attempts=attempt + 1, generation=record.generation()
                )
            record.engine_seconds += time.perf_counter() - started
            record.called(messages, result, self._serving_label(result))
            first_error: DialectParseError | None = None
            for sample in result.all_samples:
                try:
                    parsed = self.dialect.parse_step(sample.text, geometry)
                except DialectParseError as exc:
                    record.add(sample, exc.message)
                    if first_error is None:
                        text, first_error = sample.text, exc
                    continue
                record.add(sample, "", parsed)
            if record.chosen is not None:
                parsed, chosen = record.chosen
                return Decision(
                    actions=parsed.actions,
                    thought=parsed.thought,
                    note=parsed.note,
                    raw_output=record.completions[chosen].text,
                    attempts=attempt + 1,
                    generation=record.generation(),
                )
            assert first_error is not None
            log.info("unusable output on %s: %s", request_id, first_error.message)
            error = first_error
            messages = self.dialect.repair_messages(messages, text, first_error)
        assert error is not None
        reason = f"model output unparseable after {attempts} attempt(s): {error.message}"
        return Decision(
            (Fail(reason),), raw_output=text, attempts=attempts, generation=record.generation()
        )

    def pinning(self) -> Pinning:
        """The model, dialect (and its prompt hash), resize rule and Locate's sampling."""
        version = self.engine.policy_version if isinstance(self.engine, UpdatableEngine) else None
        spec = self.dialect.spec
        return Pinning(
            policy=self.name,
            # Engines name their model differently; each that has one calls it `model`.
            model=str(getattr(self.engine, "model", "") or ""),
            engine=self.engine.name,
            dialect=self.dialect.name,
            prompt_hash=self.dialect.prompt_hash,
            resize_rule=spec.resize.rule_text(),
            coordinates=spec.coordinates.value,
            sampling=self.dialect.sampling(),
            policy_version=0 if version is None else version.number,
            policy_version_label="" if version is None else version.label,
        )

    async def locate(
        self, frame: EncodedFrame, descriptions: tuple[str, ...]
    ) -> tuple[Location, ...]:
        geometry = self.dialect.geometry(frame.size)
        image = self._model_image(frame, None)
        batch = f"locate-{uuid.uuid4().hex}"

        async def one(index: int, description: str) -> Location:
            messages = self.dialect.locate_messages(image, description)
            # Each description is its own conversation: "<batch>-<n>/1/0".
            request_id = f"{batch}-{index}/1/0"
            request = GenerationRequest(
                request_id=request_id,
                messages=messages,
                sampling=self.dialect.sampling(),
                json_schema=self.dialect.location_schema(geometry),
            )
            text = (await self._generate(request_id, request)).text
            try:
                target = self.dialect.parse_location(text, geometry)
            except DialectParseError:
                return Location(description, found=False, raw_output=text)
            return Location(
                description, found=True, point=target.point, box=target.box, raw_output=text
            )

        # Concurrent requests: an engine with continuous batching runs them as one batch.
        return tuple(await asyncio.gather(*(one(i, d) for i, d in enumerate(descriptions))))

    async def abort(self, session_id: str) -> None:
        self.image_cache.drop_session(session_id)
        request_id = self._inflight.pop(session_id, None)
        if request_id is not None:
            await self.engine.abort(request_id)

    async def close(self) -> None:
        self._ready = False
        await self.engine.close()

    def _serving_label(self, result: GenerationResult) -> tuple[int, str]:
        """The engine's serving version and its label ((0, "") without versions); an
        engine that cannot be updated but asks its server (openai) puts the label on
        its result, for the newest version of its samples."""
        if isinstance(self.engine, UpdatableEngine):
            version = self.engine.policy_version
            return version.number, version.label
        newest = max((v.version for s in result.all_samples for v in s.versions), default=0)
        return newest, result.policy_label

    def _model_images(
        self, context: StepContext
    ) -> tuple[tuple[EncodedFrame, ...], tuple[ImagePart, ...]]:
        """The frames this step's prompt shows (the layout drops them in blocks) and
        their images: from the cache by content, else made (lazily: pixels come when
        the engine asks, from the daemon's decoded screens where it has them)."""
        shown = context.frames[-self.dialect.spec.images_shown(context.step) :]
        decoded = context.decoded.peek if context.decoded is not None else None
        images = tuple(
            self.image_cache.get(
                context.session_id,
                frame.content_key,
                functools.partial(self._model_image, frame, decoded),
            )
            for frame in shown
        )
        self.image_cache.retain(context.session_id, (f.content_key for f in shown))
        return tuple(shown), images

    def _model_image(self, frame: EncodedFrame, decoded: PixelLookup | None) -> ImagePart:
        return self.dialect.model_image(
            frame, engine_resizes=self.engine.processes_images, decoded=decoded
        )

    @staticmethod
    def _request(
        request_id: str,
        messages: tuple[ChatMessage, ...],
        schema: dict[str, Any] | None,
        sampling: StepSampling,
        step: int,
        attempt: int,
        tools: ToolUse | None = None,
    ) -> GenerationRequest:
        return GenerationRequest(
            request_id=request_id,
            messages=messages,
            sampling=sampling.for_call(step, attempt),
            json_schema=schema,
            n=sampling.n,
            logprobs=sampling.logprobs,
            tools=tools,
        )

    async def _generate(self, owner: str, request: GenerationRequest) -> GenerationResult:
        request_id = request.request_id
        self._inflight[owner] = request_id
        try:
            return await self.engine.generate(request)
        finally:
            if self._inflight.get(owner) == request_id:
                del self._inflight[owner]


class _Record:
    """A step's StepGeneration as it accumulates over its model calls."""

    def __init__(
        self,
        messages: tuple[ChatMessage, ...],
        *,
        frame_ids: dict[int, str],
        keep_prompt_ids: bool = False,
    ) -> None:
        self.messages = messages
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.engine_seconds = 0.0
        self.completions: list[Completion] = []
        self.chosen: tuple[ParsedStep, int] | None = None
        # Each completion's call's prompt ids (kept only when the session asks).
        self._prompt_ids: list[tuple[int, ...]] = []
        self._keep_prompt_ids = keep_prompt_ids
        self._frame_ids = frame_ids
        self._call_prompt_ids: tuple[int, ...] = ()
        self._serving: tuple[int, str] = (0, "")

    def called(
        self, messages: tuple[ChatMessage, ...], result: GenerationResult, serving: tuple[int, str]
    ) -> None:
        # The latest call's prompt: a repair prompt extends the one before it.
        self.messages = messages
        self.prompt_tokens = result.prompt_tokens
        self.completion_tokens += result.completion_tokens
        self._call_prompt_ids = result.prompt_token_ids if self._keep_prompt_ids else ()
        self._serving = serving

    def add(self, sample: Sample, parse_error: str, parsed: ParsedStep | None = None) -> None:
        if parsed is not None and self.chosen is None:
            self.chosen = (parsed, len(self.completions))
        self._prompt_ids.append(self._call_prompt_ids)
        self.completions.append(
            Completion(
                text=sample.text,
                token_ids=sample.token_ids,
                token_logprobs=sample.token_logprobs,
                cumulative_logprob=sample.cumulative_logprob,
                parse_error=parse_error,
                versions=sample.versions,
            )
        )

    def generation(self) -> StepGeneration:
        chosen = None if self.chosen is None else self.chosen[1]
        # The step's prompt is the chosen completion's (else the last call's, as
        # `messages`): a repair call's prompt differs from the first call's.
        index = chosen if chosen is not None else len(self.completions) - 1
        completion = self.completions[index] if self.completions else None
        version = completion.policy_version if completion is not None else 0
        number, label = self._serving
        return StepGeneration(
            messages=self.messages,
            completions=tuple(self.completions),
            chosen=chosen,
            prompt_tokens=self.prompt_tokens,
            engine_seconds=self.engine_seconds,
            completion_tokens=self.completion_tokens,
            policy_version=version,
            # The label is known for the version serving at the call's end only.
            policy_label=label if version == number else "",
            prompt_token_ids=self._prompt_ids[index] if completion is not None else (),
            images=tuple(
                PromptImageRef(
                    self._frame_ids.get(id(image), ""),
                    image.content_id,
                    image.width,
                    image.height,
                    image.resized,
                )
                for message in self.messages
                for image in message.images
            ),
        )
