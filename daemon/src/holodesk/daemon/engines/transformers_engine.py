"""TransformersEngine: local generation with Hugging Face transformers, CPU or GPU.

For development machines and small hosts; the `vllm` engine is the one that
serves many sessions.

- Loading: the checkpoint's processor and the right Auto model class (see
  transformers_loading.py), on `device` in `dtype`, or spread by `device_map`
  (passed through to `from_pretrained`, needs accelerate); trust_remote_code is
  honoured everywhere.
- Prompts: the model's own chat template renders the dialect's ChatMessages;
  images go to the processor as PIL images, which expands each placeholder.
- Concurrency: one generation at a time per engine. Requests queue FIFO on the
  engine's single worker thread, which also loads the model and prepares the
  inputs; nothing blocks the event loop. No batching: a queue is simple and
  exact, and batching is what the vllm engine is for.
- Sampling: greedy when temperature is 0, else sampling with temperature and
  top_p, seeded with the request's seed (torch's global generator, safe
  because one generation runs at a time). n completions are one generate()
  call with num_return_sequences=n.
- Logprobs: each generated token's log-probability under the model's raw
  distribution (log-softmax of its logits, before temperature and top_p), as
  vLLM's default logprobs_mode gives them.
- abort(request_id), or cancelling the task awaiting generate(), sets a flag
  that a StoppingCriteria reads after every token: the generation stops at the
  next token; a queued request never starts. generate() then raises
  EngineError("... was aborted"), as the vllm engine does.
- Weight updates (UpdatableEngine, engines/weights.py): a checkpoint of the same
  model or a PEFT LoRA adapter replaces the weights in this model object, between
  generations; see transformers_updates.py for what each mode means here. Every
  sample says which version made it (`Sample.versions`, one span: a generation
  never straddles an update here), and every result carries the prompt's token
  ids exactly as given to generate() (`GenerationResult.prompt_token_ids`).
- Structured output is NOT enforced: transformers has no JSON-schema decoding
  built in, so `json_schema` is ignored and the dialect's parser validates the
  output (and asks for a repair when it does not parse).
- Token counts: prompt tokens as tokenized (image tokens included), completion
  tokens as generated (the end-of-sequence token included).
- Tools: a request's tools go to the chat template's `tools` argument, and the
  calls are read from the model's text by vLLM's tool-call parser (vllm_tools.py),
  the one the spec names, so this engine and vLLM read one syntax one way. That
  needs vLLM installed (it is imported on the first tool request, on the worker
  thread: seconds, once); without it a tool request fails with the install hint
  rather than with a second, hand-written parser. The call is not constrained
  (no structured decoding here), so a model that writes no call gets the dialect's
  parse error and repair prompt.

Install: holodesk-daemon[transformers].
"""

from __future__ import annotations

import asyncio
import gc
import logging
import math
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from holodesk.daemon.engines.base import (
    EngineError,
    GenerationRequest,
    GenerationResult,
    Sample,
)
from holodesk.daemon.engines.chat import template_chat, template_tools
from holodesk.daemon.engines.generation_gate import GateAbortedError, GenerationGate
from holodesk.daemon.engines.transformers_loading import LoadedModel, import_stack, load
from holodesk.daemon.engines.transformers_options import TransformersSettings
from holodesk.daemon.engines.transformers_updates import TransformersUpdates
from holodesk.daemon.engines.weights import (
    PolicyVersion,
    UpdateMode,
    WeightUpdate,
    version_spans,
)

log = logging.getLogger(__name__)


class _AbortedError(Exception):
    pass


class _InterruptedError(Exception):
    """Stopped for a weight update in mode ABORT: the request runs again."""


class TransformersEngine:
    name = "transformers"
    # The checkpoint's processor tiles or resizes whatever pixels it is given.
    processes_images = True

    def __init__(self, settings: TransformersSettings) -> None:
        self.settings = settings
        self._loaded: LoadedModel | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._start_lock = asyncio.Lock()
        self._flags: dict[str, threading.Event] = {}
        self._running: str | None = None
        # Recent aborts (explicit or by cancellation), for operators and tests.
        self.aborted: deque[str] = deque(maxlen=256)
        self._gate = GenerationGate()
        self._updates = TransformersUpdates(
            settings, self._gate, lambda: self.loaded, lambda: len(self._flags)
        )

    @property
    def model(self) -> str:
        return self.settings.model

    @property
    def loaded(self) -> LoadedModel:
        """The model, processor and device (EngineError before start())."""
        if self._loaded is None:
            raise EngineError("the transformers engine is not started")
        return self._loaded

    @property
    def inflight(self) -> frozenset[str]:
        """Requests queued or generating now."""
        return frozenset(self._flags)

    async def start(self) -> None:
        async with self._start_lock:
            if self._loaded is not None:
                return
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="transformers")
            loop = asyncio.get_running_loop()
            log.info("loading %s with transformers (%s)", self.model, self.settings)
            loaded = await loop.run_in_executor(self._executor, load, self.settings)
            await loop.run_in_executor(self._executor, self._updates.fingerprint_started, loaded)
            self._loaded = loaded
            log.info("%s loaded on %s as %s", self.model, self._loaded.device, self._loaded.dtype)

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        loaded = self.loaded
        if not request.messages:
            raise EngineError("a generation request needs at least one message")
        if request.request_id in self._flags:
            raise EngineError(f"request {request.request_id!r} is already running")
        assert self._executor is not None
        flag = threading.Event()
        self._flags[request.request_id] = flag
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, self._work, loaded, request, flag)
        except asyncio.CancelledError:
            # A queued request is dropped from the queue; a running one stops at its next token.
            flag.set()
            self.aborted.append(request.request_id)
            current = asyncio.current_task()
            if current is not None and current.cancelling() == 0:
                # Not our caller's cancellation: close() dropped the queued request.
                raise EngineError(f"request {request.request_id}: the engine closed") from None
            raise
        except _AbortedError:
            raise EngineError(f"request {request.request_id} was aborted") from None
        finally:
            self._flags.pop(request.request_id, None)

    @property
    def running(self) -> str | None:
        """The request the worker thread is generating for now, if any."""
        return self._running

    def _work(
        self, loaded: LoadedModel, request: GenerationRequest, flag: threading.Event
    ) -> GenerationResult:
        """Runs on the worker thread: through the gate, again after an ABORT update."""
        while True:
            try:
                with self._gate.generation(flag):
                    # Weights change only while the gate is closed: this version
                    # made every token of this generation.
                    version = self._updates.version.number
                    self._running = request.request_id
                    try:
                        return _generate(
                            loaded,
                            request,
                            flag,
                            self.settings.max_new_tokens,
                            self._gate.interrupt,
                            version,
                        )
                    except _InterruptedError:
                        self._gate.note_interrupted()
                    finally:
                        self._running = None
            except GateAbortedError:
                raise _AbortedError from None

    @property
    def policy_version(self) -> PolicyVersion:
        return self._updates.version

    @property
    def updating(self) -> bool:
        return self._updates.updating

    async def update_weights(
        self, checkpoint: Path, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        return await self._updates.update_weights(checkpoint, mode, version=version, label=label)

    async def load_adapter(
        self, adapter: Path, name: str, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        return await self._updates.load_adapter(adapter, name, mode, version=version, label=label)

    async def unload_adapter(
        self, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        return await self._updates.unload_adapter(mode, version=version, label=label)

    async def abort(self, request_id: str) -> None:
        flag = self._flags.get(request_id)
        self.aborted.append(request_id)
        if flag is not None:
            flag.set()

    async def close(self) -> None:
        self._updates.refuse()
        for flag in self._flags.values():
            flag.set()
        # A running update ends: the flags just stopped the generation it may wait for.
        await self._updates.idle()
        executor, self._executor = self._executor, None
        if executor is not None:
            # Waits for the running generation, which the flags just stopped.
            await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)
        loaded, self._loaded = self._loaded, None
        if loaded is not None:
            device_type = getattr(loaded.device, "type", "cpu")
            del loaded
            gc.collect()
            if device_type == "cuda":
                torch, _ = import_stack()
                torch.cuda.empty_cache()


def _generate(
    loaded: LoadedModel,
    request: GenerationRequest,
    flag: threading.Event,
    cap: int | None,
    interrupt: threading.Event,
    version: int,
) -> GenerationResult:
    """Runs on the engine's worker thread, with the gate held (no update meanwhile)."""
    if flag.is_set():
        raise _AbortedError
    torch, transformers = import_stack()
    calling = None
    if request.tools is not None:
        from holodesk.daemon.engines.vllm_tools import ToolCalling

        calling = ToolCalling(loaded.tokenizer, request.tools)
    inputs = _inputs(loaded, request)
    prompt_tokens = int(inputs["input_ids"].shape[1])
    prompt_token_ids = tuple(int(t) for t in inputs["input_ids"][0].tolist())
    stop = _abort_criteria(transformers, flag, interrupt)
    sampling = request.sampling
    limit = sampling.max_tokens if cap is None else min(sampling.max_tokens, cap)
    options: dict[str, Any] = {
        "max_new_tokens": limit,
        "stopping_criteria": transformers.StoppingCriteriaList([stop]),
        "num_return_sequences": request.n,
        "return_dict_in_generate": True,
        "output_logits": request.logprobs,
    }
    pad = loaded.tokenizer.pad_token_id
    options["pad_token_id"] = pad if pad is not None else loaded.tokenizer.eos_token_id
    if sampling.temperature > 0:
        options.update(do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p)
        if sampling.seed is not None:
            # set_seed also seeds numpy, which takes 32 bits.
            transformers.set_seed(sampling.seed % 2**32)
    else:
        # Explicitly greedy, whatever sampling defaults the checkpoint's generation config has.
        options.update(do_sample=False, temperature=None, top_p=None, top_k=None)
    try:
        with torch.inference_mode():
            output = loaded.model.generate(**inputs, **options)
    except Exception as exc:
        raise EngineError(f"transformers generate() failed: {type(exc).__name__}: {exc}") from exc
    if flag.is_set():
        raise _AbortedError
    if stop.interrupted:
        raise _InterruptedError
    new_tokens = output.sequences[:, prompt_tokens:]
    scores = None
    if request.logprobs:
        with torch.inference_mode():
            scores = loaded.model.compute_transition_scores(
                output.sequences, output.logits, normalize_logits=True
            )
    stops = _stop_ids(loaded)
    samples = []
    for row in range(new_tokens.shape[0]):
        ids = [int(t) for t in new_tokens[row].tolist()]
        # Finished sequences are padded up to the longest: cut after their end token.
        length = next((i + 1 for i, t in enumerate(ids) if t in stops), len(ids))
        ids = ids[:length]
        skip = calling.skip_special_tokens if calling is not None else True
        text = str(loaded.tokenizer.decode(ids, skip_special_tokens=skip))
        if calling is not None:
            text = calling.reply(text)
        versions = version_spans([(0, version)], length)
        if scores is None:
            samples.append(Sample(text, length, versions=versions))
            continue
        values = tuple(float(v) for v in scores[row, :length].tolist())
        samples.append(
            Sample(
                text,
                length,
                token_ids=tuple(ids),
                token_logprobs=values,
                cumulative_logprob=math.fsum(values),
                versions=versions,
            )
        )
    return GenerationResult.of(tuple(samples), prompt_tokens, prompt_token_ids)


def _stop_ids(loaded: LoadedModel) -> frozenset[int]:
    """The ids that end a sequence: the generation config's eos ids, else the tokenizer's."""
    config = getattr(loaded.model, "generation_config", None)
    eos = getattr(config, "eos_token_id", None)
    if eos is None:
        eos = loaded.tokenizer.eos_token_id
    if eos is None:
        return frozenset()
    return frozenset(eos if isinstance(eos, list | tuple) else [eos])


def _inputs(loaded: LoadedModel, request: GenerationRequest) -> Any:
    chat = template_chat(request.messages)
    if chat.images and not loaded.takes_images:
        raise EngineError(f"{request.request_id}: this model's processor takes no images")
    owner = (
        loaded.processor if getattr(loaded.processor, "chat_template", None) else loaded.tokenizer
    )
    try:
        text = owner.apply_chat_template(
            chat.messages, tokenize=False, add_generation_prompt=True, **template_tools(request)
        )
    except Exception as exc:
        raise EngineError(f"the chat template failed: {exc}") from exc
    try:
        if chat.images:
            # The chat template already wrote the special tokens (BOS...).
            inputs = loaded.processor(
                images=list(chat.images),
                text=[str(text)],
                return_tensors="pt",
                add_special_tokens=False,
            )
        else:
            inputs = loaded.tokenizer([str(text)], return_tensors="pt", add_special_tokens=False)
    except Exception as exc:
        raise EngineError(f"the processor failed: {type(exc).__name__}: {exc}") from exc
    if chat.images:
        # Pixel values in the model's dtype (a bfloat16 model would reject float32 ones).
        return inputs.to(loaded.device, dtype=loaded.dtype)
    return inputs.to(loaded.device)


def _abort_criteria(transformers: Any, flag: threading.Event, interrupt: threading.Event) -> Any:
    import torch

    class StopOnAbort(transformers.StoppingCriteria):  # type: ignore[misc]
        """True for every sequence once the request's abort flag is set, or a weight
        update (mode ABORT) interrupts it; `interrupted` says which."""

        interrupted = False

        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            if interrupt.is_set() and not flag.is_set():
                self.interrupted = True
            stop = flag.is_set() or self.interrupted
            return torch.full(
                (input_ids.shape[0],), stop, dtype=torch.bool, device=input_ids.device
            )

    return StopOnAbort()
