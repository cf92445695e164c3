"""Weights that change while the vllm engine serves: vLLM's CPU build, the tiny
Holotron-architecture model, and a second checkpoint of it with other random weights.

One engine for the module (with LoRA enabled, so adapters and full updates run on
the same engine; every request ignores EOS, so a long request is long). The
tests update it back and forth between the two checkpoints A (the engine's own
folder) and B: each test swaps to whichever does not serve (`other`). Random
weights give gibberish: the tests compare token ids (greedy), never meaning.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytest_asyncio
from safetensors.numpy import load_file, save_file
from transformers import AutoTokenizer

from holodesk.daemon.engines.base import (
    EngineError,
    GenerationRequest,
    GenerationResult,
    SamplingParams,
    TextPart,
)
from holodesk.daemon.engines.chat import template_chat
from holodesk.daemon.engines.vllm_engine import VllmEngine, _is_cache_miss
from holodesk.daemon.engines.weights import (
    CheckpointInvalidError,
    CheckpointNotFoundError,
    EngineClosingError,
    PolicyVersion,
    UpdatableEngine,
    UpdateBusyError,
    UpdateIneffectiveError,
    UpdateMode,
    UpdateUnsupportedError,
    WeightUpdateError,
)
from holodesk.values.generation import VersionSpan
from tests.daemon.support import GUARD_S
from tests.engines.support import (
    TILE_TOKENS,
    chat_request,
    cpu_engine_args,
    eventually,
    needs_vllm,
    png,
    request,
)
from tests.support.tiny_models import (
    IMG_CONTEXT,
    IMG_END,
    IMG_START,
    TinyModel,
    build_tiny_nemotron_vl,
)

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
    needs_vllm,
]

# Tokens of a request that must still run when an update pauses generation.
LONG = 160
# Tokens of a greedy probe of which weights serve.
SHORT = 8
SHORT_SAMPLING = SamplingParams(max_tokens=SHORT)
LORA_RANK = 8


def engine_args(model: Path, **extra: Any) -> dict[str, Any]:
    return cpu_engine_args(
        model,
        dtype="bfloat16",  # vLLM casts vision features to bf16
        max_num_seqs=8,
        images=2,
        trust_remote_code=True,  # the config class lives in the checkpoint
        **extra,
    )


def module_engine_args(model: Path) -> dict[str, Any]:
    return engine_args(model, enable_lora=True, max_lora_rank=LORA_RANK, max_loras=1)


@dataclass(frozen=True)
class Checkpoints:
    a: Path  # the engine's own folder
    b: Path  # the same model with other random weights
    a_checksum: str  # the engine's fingerprint of A
    a_output: tuple[tuple[int, ...], tuple[float, ...]]  # `scored` on A, as started
    truncated: Path
    wider: Path
    adapter: Path
    adapter_for_another_base: Path
    scratch: Path


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine(tiny_model: TinyModel, vllm_env: None) -> AsyncIterator[VllmEngine]:
    engine = VllmEngine(module_engine_args(tiny_model.path), sampling_extra={"ignore_eos": True})
    started = time.perf_counter()
    await engine.start()
    print(f"\nvllm engine start (import included): {time.perf_counter() - started:.1f} s")
    yield engine
    await engine.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def checkpoints(
    engine: VllmEngine, tiny_model: TinyModel, tmp_path_factory: pytest.TempPathFactory
) -> Checkpoints:
    root = tmp_path_factory.mktemp("checkpoints")
    assert engine.policy_version.number == 0, "the checkpoints fixture records A's fingerprint"
    a_output = await scored(engine, "a-as-started")
    # B: the model of another seed, in a copy of A's folder (A's config and tokenizer).
    other = build_tiny_nemotron_vl(root / "seed-1", replace(tiny_model.spec, seed=1))
    b = _copy(tiny_model.path, root / "b")
    shutil.copyfile(other.path / "model.safetensors", b / "model.safetensors")
    truncated = _copy(b, root / "half-written")
    weights = truncated / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    wider = build_tiny_nemotron_vl(root / "wider", replace(tiny_model.spec, hidden_size=96)).path
    return Checkpoints(
        a=tiny_model.path,
        b=b,
        a_checksum=engine.policy_version.checksum,
        a_output=a_output,
        truncated=truncated,
        wider=wider,
        adapter=_adapter(root / "adapter", hidden=tiny_model.spec.hidden_size),
        adapter_for_another_base=_adapter(root / "adapter-96", hidden=96),
        scratch=root,
    )


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def _adapter(folder: Path, *, hidden: int) -> Path:
    """A PEFT LoRA adapter on the attention layer (layer 1 of "M*M-") of a base
    whose hidden size is `hidden`, with weights large enough to change greedy output."""
    folder.mkdir()
    rng = np.random.default_rng(7)
    spec = TinyModelSizes()
    outputs = {"q_proj": spec.q, "k_proj": spec.kv, "v_proj": spec.kv, "o_proj": hidden}
    inputs = {"q_proj": hidden, "k_proj": hidden, "v_proj": hidden, "o_proj": spec.q}
    tensors = {}
    for name, out in outputs.items():
        base = f"base_model.model.language_model.backbone.layers.1.mixer.{name}"
        tensors[f"{base}.lora_A.weight"] = rng.standard_normal((LORA_RANK, inputs[name]))
        tensors[f"{base}.lora_B.weight"] = rng.standard_normal((out, LORA_RANK))
    save_file(
        {k: (v * 0.5).astype(np.float32) for k, v in tensors.items()},
        str(folder / "adapter_model.safetensors"),
    )
    config = {
        "peft_type": "LORA",
        "r": LORA_RANK,
        "lora_alpha": 2 * LORA_RANK,
        "target_modules": sorted(outputs),
        "bias": "none",
        "task_type": "CAUSAL_LM",
    }
    (folder / "adapter_config.json").write_text(json.dumps(config))
    return folder


@dataclass(frozen=True)
class TinyModelSizes:
    """Attention sizes of TinyNemotronSpec's defaults: 2 query heads, 1 kv head, 32 each."""

    q: int = 64
    kv: int = 32


def other(engine: VllmEngine, checkpoints: Checkpoints) -> Path:
    """The checkpoint that does not serve now."""
    serving_a = engine.policy_version.checksum == checkpoints.a_checksum
    return checkpoints.b if serving_a else checkpoints.a


def serving(engine: VllmEngine, checkpoints: Checkpoints) -> Path:
    return checkpoints.a if other(engine, checkpoints) == checkpoints.b else checkpoints.b


async def greedy(engine: VllmEngine, request_id: str) -> tuple[int, ...]:
    """The greedy token ids of a fixed short request, checked to be of one version."""
    return (await scored(engine, request_id))[0]


async def scored(engine: VllmEngine, request_id: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The greedy token ids of a fixed short request with an image, and their logprobs."""
    probe = replace(request(request_id, images=1, max_tokens=SHORT), logprobs=True)
    result = await engine.generate(probe)
    (sample,) = result.samples
    assert sample.versions == (VersionSpan(engine.policy_version.number, 0, SHORT),)
    return sample.token_ids, sample.token_logprobs


def assert_same_output(
    got: tuple[tuple[int, ...], tuple[float, ...]],
    expected: tuple[tuple[int, ...], tuple[float, ...]],
) -> None:
    """The same greedy tokens, and logprobs equal within 1e-6 (same weights, same
    kernels, same batch: they are bitwise equal in practice)."""
    assert got[0] == expected[0]
    gaps = [abs(a - b) for a, b in zip(got[1], expected[1], strict=True)]
    assert max(gaps) <= 1e-6, gaps


def long_request(request_id: str, images: int = 1) -> GenerationRequest:
    return request(request_id, images=images, max_tokens=LONG)


async def running(engine: VllmEngine, *request_ids: str) -> None:
    """Wait until each request has sampled some tokens (so it is decoding, not prefilling)."""

    def decoding() -> bool:
        return all(engine.generated(request_id) >= 4 for request_id in request_ids)

    await eventually(decoding, f"{', '.join(request_ids)} decode")


async def paused(engine: VllmEngine) -> None:
    deadline = asyncio.get_running_loop().time() + GUARD_S
    while not await engine.llm.is_paused():
        assert asyncio.get_running_loop().time() < deadline, "generation never paused"
        await asyncio.sleep(0.02)


def one_span(result: GenerationResult) -> VersionSpan:
    (sample,) = result.samples
    (span,) = sample.versions
    return span


async def test_the_engine_is_updatable_and_labels_its_weights(
    engine: VllmEngine, checkpoints: Checkpoints
) -> None:
    assert isinstance(engine, UpdatableEngine)
    version = engine.policy_version
    assert version == PolicyVersion(0, checksum=checkpoints.a_checksum)
    assert version.checksum.startswith("sha256:")
    assert await engine.llm.get_weight_version() == "0"
    assert not engine.updating
    await greedy(engine, "label-probe")


async def test_keep_continues_requests_in_flight_on_the_new_weights(
    engine: VllmEngine, checkpoints: Checkpoints
) -> None:
    before = engine.policy_version
    baseline = await greedy(engine, "keep-before")
    tasks = [
        asyncio.create_task(engine.generate(long_request(f"keep-{i}", images=i))) for i in (0, 1)
    ]
    await running(engine, "keep-0", "keep-1")
    update = await engine.update_weights(other(engine, checkpoints), UpdateMode.KEEP, label="b")
    results = await asyncio.wait_for(asyncio.gather(*tasks), GUARD_S * 4)

    new = update.version
    assert (new.number, new.label, update.previous, update.mode) == (
        before.number + 1,
        "b",
        before,
        UpdateMode.KEEP,
    )
    assert new.checksum.startswith("sha256:")
    assert new.checksum != before.checksum
    assert (update.requests_in_flight, update.requests_retried) == (2, 0)
    assert 0 < update.paused_seconds <= update.seconds
    assert engine.policy_version == new
    assert await engine.llm.get_weight_version() == str(new.number)
    for result in results:
        (sample,) = result.samples
        assert sample.completion_tokens == LONG
        # Frozen mid-way, then finished on the new weights: two spans, in order.
        old_span, new_span = sample.versions
        assert old_span == VersionSpan(before.number, 0, old_span.end)
        assert new_span == VersionSpan(new.number, old_span.end, LONG)
        assert 0 < old_span.end < LONG
    assert await greedy(engine, "keep-after") != baseline


async def test_wait_finishes_requests_in_flight_on_the_old_weights_first(
    engine: VllmEngine, checkpoints: Checkpoints
) -> None:
    before = engine.policy_version
    target = other(engine, checkpoints)
    long = asyncio.create_task(engine.generate(long_request("wait-long")))
    await running(engine, "wait-long")
    update_task = asyncio.create_task(engine.update_weights(target, UpdateMode.WAIT))
    await paused(engine)
    assert engine.updating
    # A second update while one runs is refused at once, and changes nothing.
    with pytest.raises(UpdateBusyError, match="another update"):
        await engine.update_weights(target, UpdateMode.KEEP)
    late = asyncio.create_task(engine.generate(request("wait-late", max_tokens=SHORT)))
    update = await asyncio.wait_for(update_task, GUARD_S * 4)
    in_flight, after_pause = await asyncio.gather(long, late)

    assert update.version.number == before.number + 1
    assert update.mode is UpdateMode.WAIT
    assert update.requests_in_flight == 1
    assert one_span(in_flight) == VersionSpan(before.number, 0, LONG)
    assert one_span(after_pause) == VersionSpan(update.version.number, 0, SHORT)
    assert not engine.updating


async def test_abort_runs_requests_in_flight_again_on_the_new_weights(
    engine: VllmEngine, checkpoints: Checkpoints
) -> None:
    before = engine.policy_version
    tasks = [
        asyncio.create_task(engine.generate(long_request(f"abort-{i}", images=i))) for i in (0, 1)
    ]
    await running(engine, "abort-0", "abort-1")
    update = await engine.update_weights(other(engine, checkpoints), UpdateMode.ABORT)
    # No caller sees the abort: each gets one answer, wholly of the new version.
    results = await asyncio.wait_for(asyncio.gather(*tasks), GUARD_S * 4)

    assert update.version.number == before.number + 1
    assert (update.requests_in_flight, update.requests_retried) == (2, 2)
    for result in results:
        # Run again from its first token: LONG tokens, not LONG + those aborted.
        assert result.completion_tokens == LONG
        assert one_span(result) == VersionSpan(update.version.number, 0, LONG)


async def test_the_old_weights_serve_again_after_a_round_trip(
    engine: VllmEngine, checkpoints: Checkpoints
) -> None:
    """Back to a checkpoint that served before: the same fingerprint, the same greedy
    output as then (nothing of the weights in between, nor of their caches, is left)."""
    first = serving(engine, checkpoints)
    first_version = engine.policy_version
    first_output = await scored(engine, "trip-1")
    await engine.update_weights(other(engine, checkpoints), UpdateMode.KEEP)
    between = await greedy(engine, "trip-2")
    back = await engine.update_weights(first, UpdateMode.KEEP)
    assert back.version.checksum == first_version.checksum
    assert back.version.number == first_version.number + 2
    assert between != first_output[0]
    assert_same_output(await scored(engine, "trip-3"), first_output)


async def test_an_updated_engine_computes_as_a_fresh_start_on_its_checkpoint(
    engine: VllmEngine, checkpoints: Checkpoints
) -> None:
    """The module's engine, started on A and updated to B, against an engine started
    on B: the same fingerprint, the same greedy tokens, the same logprobs.

    On a CPU that prepacks Mamba2's conv1d weight, every update left the mixers'
    `conv_weights` buffer (the view the convolution reads) with A's values: the
    fingerprint of the parameters matched a fresh start on B while the logprobs were
    ~6x further from B's than a fresh engine's. A round trip back to A cannot show
    it (the stale values are A's), hence the second engine (~20-40 s)."""
    fresh = VllmEngine(module_engine_args(checkpoints.b), sampling_extra={"ignore_eos": True})
    started = time.perf_counter()
    await fresh.start()
    try:
        print(f"\nsecond vllm engine start: {time.perf_counter() - started:.1f} s")
        expected_checksum = fresh.policy_version.checksum
        expected = await scored(fresh, "fresh-b")
    finally:
        await fresh.close()
    if serving(engine, checkpoints) != checkpoints.b:
        await engine.update_weights(checkpoints.b, UpdateMode.WAIT)
    assert engine.policy_version.checksum == expected_checksum
    assert_same_output(await scored(engine, "updated-b"), expected)
    # And back: A's own output at the engine's start.
    await engine.update_weights(checkpoints.a, UpdateMode.KEEP)
    assert engine.policy_version.checksum == checkpoints.a_checksum
    assert_same_output(await scored(engine, "updated-a"), checkpoints.a_output)


@pytest.mark.parametrize(
    ("kernel", "dtype"), [("onednn", "bfloat16"), ("onednn", "float32"), ("sgl", "bfloat16")]
)
async def test_the_fingerprint_reads_the_weights_a_cpu_kernel_packed(
    kernel: str, dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On CPU, vLLM hands an unquantized linear layer's weight to a kernel that keeps
    its own packed copy (oneDNN; the AMX "sgl" kernel where the CPU has AMX) and
    empties the parameter: a fingerprint of the parameters saw none of the model's
    linear layers. It reads the weight back through the kernel, exactly."""
    import torch
    from vllm import _custom_ops
    from vllm.model_executor.layers import utils

    from holodesk.daemon.engines.fingerprint import fingerprint
    from holodesk.daemon.engines.vllm_worker import leaf_tensors

    torch_dtype = getattr(torch, dtype)
    if kernel == "onednn":
        if not _custom_ops._supports_onednn:
            pytest.skip("this vLLM build has no oneDNN kernels")
        monkeypatch.setattr(utils, "check_cpu_sgl_kernel", lambda *_: False)
    elif not utils.check_cpu_sgl_kernel(96, 64, torch_dtype):
        pytest.skip("no AMX on this CPU")

    def model(weight: torch.Tensor, packed: bool) -> torch.nn.Module:
        layer = torch.nn.Module()
        layer.weight = torch.nn.Parameter(weight.clone(), requires_grad=False)
        layer.input_size = weight.shape[1]
        if packed:
            utils.dispatch_cpu_unquantized_gemm(layer, remove_weight=True)
            assert layer.weight.numel() == 0
        return torch.nn.Sequential(layer)

    weight = torch.randn(96, 64, generator=torch.Generator().manual_seed(3)).to(torch_dtype)
    changed = weight.clone()
    changed[5, 7] += 1
    with torch.inference_mode():
        ((name, read),) = list(leaf_tensors(model(weight, packed=True)))
        assert name == "0.weight"
        assert read.dtype == torch_dtype
        assert torch.equal(read, weight)
        packed = fingerprint(leaf_tensors(model(weight, packed=True)))
        assert packed == fingerprint(leaf_tensors(model(weight, packed=False)))
        assert packed != fingerprint(leaf_tensors(model(changed, packed=True)))


async def test_an_update_keeps_the_images_vllm_has_preprocessed(
    engine: VllmEngine, checkpoints: Checkpoints
) -> None:
    """vLLM's multimodal processor cache holds preprocessed pixels, which no weight
    touches: an update leaves it, on both sides, as it was. Cleared at the pause
    (as vLLM's pause_generation(clear_cache=True) does), it failed a request that
    vLLM was preprocessing then with "Expected a cached item for mm_hash=...": the
    entry went between the processor's check and its read."""
    screen = replace(png(320, 320, 77), content_id="screen-kept-across-updates")
    step = chat_request("kept-before", (screen, TextPart("Open the menu.")), SHORT_SAMPLING)
    before = await engine.generate(step)
    cache = engine.llm.renderer.mm_processor_cache
    assert cache.is_cached([screen.content_id]) == [True]
    in_flight = asyncio.create_task(engine.generate(long_request("kept-long", images=1)))
    await running(engine, "kept-long")
    await engine.update_weights(other(engine, checkpoints), UpdateMode.KEEP)
    await asyncio.wait_for(in_flight, GUARD_S * 4)

    assert cache.is_cached([screen.content_id]) == [True]
    resends = engine.resends
    # Sent by its id alone: the engine core still holds it too, so no resend.
    after = await engine.generate(replace(step, request_id="kept-after"))
    assert engine.resends == resends
    assert after.prompt_token_ids == before.prompt_token_ids


async def test_vllm_losing_an_entry_under_its_processor_is_a_cache_miss(engine: VllmEngine) -> None:
    """vLLM's own error for an entry gone between its processor's check and its read
    (raised here by the live cache itself) is a cache miss: the engine sends the
    request again with pixels instead of failing it."""
    cache = engine.llm.renderer.mm_processor_cache
    with pytest.raises(AssertionError, match="Expected a cached item for mm_hash") as lost:
        cache.get_and_update_item(None, "never-sent")
    assert _is_cache_miss(lost.value)
    assert not _is_cache_miss(AssertionError("another assertion"))


@pytest.mark.parametrize("part", ["mlp1.", "vision_model."])
async def test_a_checkpoint_that_changes_only_the_projector_or_the_vision_tower_is_loaded(
    engine: VllmEngine, checkpoints: Checkpoints, part: str
) -> None:
    """The model loads its projector (mlp1) without its parameters' weight loaders,
    which vLLM's in-place reload alone never sees: the old projector stayed, and
    this update failed as ineffective. A changed vision tower reaches the output too."""
    base = serving(engine, checkpoints)
    mixed = _mixed(base, other(engine, checkpoints), part, checkpoints.scratch / f"only-{part}")
    before = engine.policy_version
    baseline = await greedy(engine, f"{part}before")
    update = await engine.update_weights(mixed, UpdateMode.KEEP)
    assert update.version.checksum != before.checksum
    assert await greedy(engine, f"{part}changed") != baseline
    back = await engine.update_weights(base, UpdateMode.KEEP)
    assert back.version.checksum == before.checksum
    assert await greedy(engine, f"{part}back") == baseline


def _mixed(base: Path, donor: Path, part: str, target: Path) -> Path:
    """`base` with the tensors whose names start with `part` taken from `donor`."""
    folder = _copy(base, target)
    tensors = load_file(str(base / "model.safetensors"))
    donated = {
        k: v for k, v in load_file(str(donor / "model.safetensors")).items() if k.startswith(part)
    }
    assert donated
    save_file({**tensors, **donated}, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


async def test_the_serving_weights_again_are_refused_as_ineffective(
    engine: VllmEngine, checkpoints: Checkpoints
) -> None:
    before = engine.policy_version
    baseline = await greedy(engine, "same-before")
    with pytest.raises(UpdateIneffectiveError, match="left the weights as they were"):
        await engine.update_weights(serving(engine, checkpoints), UpdateMode.KEEP)
    assert engine.policy_version == before
    assert await engine.llm.get_weight_version() == str(before.number)
    assert await greedy(engine, "same-after") == baseline
    # A version not above the serving one is refused before anything is read.
    with pytest.raises(CheckpointInvalidError, match="not above the serving version"):
        await engine.update_weights(
            other(engine, checkpoints), UpdateMode.KEEP, version=before.number
        )


@pytest.mark.parametrize(
    ("case", "error", "message"),
    [
        ("missing", CheckpointNotFoundError, "does not exist"),
        ("truncated", CheckpointInvalidError, "is half-written"),
        ("wider", CheckpointInvalidError, "has another shape"),
    ],
)
async def test_a_bad_checkpoint_is_refused_and_the_old_weights_serve(
    engine: VllmEngine,
    checkpoints: Checkpoints,
    case: str,
    error: type[Exception],
    message: str,
) -> None:
    path = {
        "missing": checkpoints.scratch / "no-such-checkpoint",
        "truncated": checkpoints.truncated,
        "wider": checkpoints.wider,
    }[case]
    before = engine.policy_version
    baseline = await greedy(engine, f"{case}-before")
    with pytest.raises(error, match=message):
        await engine.update_weights(path, UpdateMode.ABORT)
    assert engine.policy_version == before
    assert not engine.updating
    assert await greedy(engine, f"{case}-after") == baseline


async def test_a_load_that_fails_midway_loads_the_previous_weights_again(
    engine: VllmEngine, checkpoints: Checkpoints
) -> None:
    """The second shard vanishes after the checks passed, while WAIT drains: the
    first shard's layers were loaded, so the previous checkpoint is loaded again."""
    sharded = _sharded(other(engine, checkpoints), checkpoints.scratch / "sharded")
    before = engine.policy_version
    baseline = await greedy(engine, "midway-before")
    long = asyncio.create_task(engine.generate(long_request("midway-long")))
    await running(engine, "midway-long")
    update_task = asyncio.create_task(engine.update_weights(sharded, UpdateMode.WAIT))
    await paused(engine)
    (sharded / "model-00002-of-00002.safetensors").unlink()
    await engine.abort("midway-long")  # its caller gives up: the drain ends now
    with pytest.raises(EngineError, match="midway-long was aborted"):
        await long
    with pytest.raises(CheckpointNotFoundError, match="were loaded again and serve") as refused:
        await asyncio.wait_for(update_task, GUARD_S * 4)
    assert "model-00002-of-00002.safetensors" in str(refused.value)
    assert engine.policy_version == before
    assert not engine.updates.broken
    assert await greedy(engine, "midway-after") == baseline


async def test_mixed_weights_never_serve_and_a_whole_checkpoint_mends_them(
    engine: VllmEngine, checkpoints: Checkpoints
) -> None:
    """A load fails midway and the previous checkpoint is gone too (a trainer deleted
    it): the engine refuses every request rather than serve mixed weights, until a
    whole checkpoint loads."""
    if serving(engine, checkpoints) != checkpoints.a:
        await engine.update_weights(checkpoints.a, UpdateMode.KEEP)
    on_a = await greedy(engine, "mend-a")
    doomed = _copy(checkpoints.b, checkpoints.scratch / "doomed")
    await engine.update_weights(doomed, UpdateMode.KEEP)
    before = engine.policy_version
    sharded = _sharded(checkpoints.a, checkpoints.scratch / "sharded-a")
    long = asyncio.create_task(engine.generate(long_request("mend-long")))
    await running(engine, "mend-long")
    update_task = asyncio.create_task(engine.update_weights(sharded, UpdateMode.WAIT))
    await paused(engine)
    (sharded / "model-00002-of-00002.safetensors").unlink()
    (doomed / "model.safetensors").unlink()
    await engine.abort("mend-long")
    with pytest.raises(EngineError, match="mend-long was aborted"):
        await long
    with pytest.raises(WeightUpdateError, match="again failed too") as refused:
        await asyncio.wait_for(update_task, GUARD_S * 4)
    assert engine.updates.broken == str(refused.value)
    assert engine.policy_version == before
    with pytest.raises(EngineError, match="serves nothing"):
        await engine.generate(request("mend-refused", max_tokens=SHORT))
    with pytest.raises(UpdateUnsupportedError, match="serves nothing"):
        await engine.load_adapter(checkpoints.adapter, "tuned", UpdateMode.WAIT)

    mended = await engine.update_weights(checkpoints.a, UpdateMode.KEEP)
    assert not engine.updates.broken
    assert mended.version.checksum == checkpoints.a_checksum
    assert await greedy(engine, "mend-after") == on_a


def _sharded(source: Path, target: Path) -> Path:
    """`source`'s weights in two shards: the language model's, then the rest."""
    folder = _copy(source, target)
    (folder / "model.safetensors").unlink()
    tensors = load_file(str(source / "model.safetensors"))
    shards = {
        "model-00001-of-00002.safetensors": {
            k: v for k, v in tensors.items() if k.startswith("language_model.")
        },
        "model-00002-of-00002.safetensors": {
            k: v for k, v in tensors.items() if not k.startswith("language_model.")
        },
    }
    weight_map = {}
    for name, shard in shards.items():
        save_file(shard, str(folder / name), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(shard, name))
    index = {"metadata": {}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return folder


async def test_a_lora_adapter_serves_every_later_request_until_unloaded(
    engine: VllmEngine, checkpoints: Checkpoints
) -> None:
    before = engine.policy_version
    baseline = await greedy(engine, "lora-before")
    loaded = await engine.load_adapter(checkpoints.adapter, "tuned", UpdateMode.KEEP)
    # A vLLM request keeps the adapter it started with: KEEP runs as WAIT.
    assert loaded.mode is UpdateMode.WAIT
    assert loaded.version == PolicyVersion(before.number + 1, "", "tuned", before.checksum)
    tuned = await greedy(engine, "lora-on")
    assert tuned != baseline

    with pytest.raises(CheckpointInvalidError, match="LoRA for another base"):
        await engine.load_adapter(checkpoints.adapter_for_another_base, "bad", UpdateMode.WAIT)
    assert engine.policy_version == loaded.version
    assert await greedy(engine, "lora-still") == tuned

    unloaded = await engine.unload_adapter(UpdateMode.ABORT)
    assert unloaded.version == PolicyVersion(before.number + 2, "", "", before.checksum)
    assert await greedy(engine, "lora-off") == baseline
    with pytest.raises(CheckpointInvalidError, match="no adapter serves"):
        await engine.unload_adapter(UpdateMode.WAIT)


async def test_updates_the_engine_configuration_cannot_do_are_refused(
    tiny_model: TinyModel, checkpoints: Checkpoints
) -> None:
    without_lora = VllmEngine(engine_args(tiny_model.path))
    with pytest.raises(UpdateUnsupportedError, match="enable_lora=true") as refused:
        await without_lora.load_adapter(checkpoints.adapter, "tuned", UpdateMode.WAIT)
    assert "merge the adapter into a checkpoint" in str(refused.value)
    theirs = VllmEngine(engine_args(tiny_model.path, worker_extension_cls="their.Extension"))
    with pytest.raises(UpdateUnsupportedError, match="weight updates need holodesk's"):
        await theirs.update_weights(checkpoints.b, UpdateMode.KEEP)


async def test_prompt_token_ids_are_the_rendered_prompt_with_images_expanded(
    engine: VllmEngine, tiny_model: TinyModel
) -> None:
    parts = (png(320, 320, 1), TextPart("Open the menu."), png(320, 320, 2))
    step = chat_request("prompt-ids", parts, SamplingParams(max_tokens=SHORT))
    result = await engine.generate(step)

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model.path))
    chat = template_chat(step.messages, decode=False)
    text = tokenizer.apply_chat_template(chat.messages, tokenize=False, add_generation_prompt=True)
    image = tokenizer.convert_tokens_to_ids(IMG_CONTEXT)
    # One 320x320 tile each: <img>, 256 x <image>, </img> where the template wrote <image>.
    tile = [
        tokenizer.convert_tokens_to_ids(IMG_START),
        *[image] * (TILE_TOKENS - 2),
        tokenizer.convert_tokens_to_ids(IMG_END),
    ]
    expected: list[int] = []
    for token in tokenizer(text, add_special_tokens=False)["input_ids"]:
        expected.extend(tile if token == image else [token])
    assert expected.count(image) == 2 * (TILE_TOKENS - 2)
    assert result.prompt_token_ids == tuple(expected)
    assert result.prompt_tokens == len(expected)


async def test_an_update_after_close_is_refused(
    engine: VllmEngine, checkpoints: Checkpoints
) -> None:
    """Last in the module: it closes the module's engine."""
    await engine.close()
    with pytest.raises(EngineClosingError, match="shutting down"):
        await engine.update_weights(other(engine, checkpoints), UpdateMode.KEEP)
