"""The transformers engine for real, on a tiny random model of Holotron's architecture.

Which model: the tiny NemotronH_Nano_VL_V2 checkpoint the vLLM tests use, seen
through transformers' native `nemotron_h_omni` class (the same module layout:
NemotronH hybrid Mamba2/attention language model, RADIO vision tower, MLP
projector; it renames the hub keys on load). transformers ships no class for
`NemotronH_Nano_VL_V2` itself (the real checkpoint brings its own code), so
`tiny_nemotron_vl_for_transformers` writes a converted config, links the same
weights and tokenizer, and adds a small images-and-text processor that
`auto_map` names (trust_remote_code), as the real checkpoint's processor is
named. That processor sizes images in 16 px patches rather than 512 px tiles:
the path is Holotron's, the image token count is not vLLM's.

Random weights give gibberish, so these tests check the path (images reach the
model, tokens are counted, aborts stop generation, the daemon fails a session
cleanly), never the answer. One engine for the whole module.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from holodesk.daemon.engines.base import (
    ChatMessage,
    ContentPart,
    EngineError,
    GenerationRequest,
    ImagePart,
    SamplingParams,
    TextPart,
)
from holodesk.daemon.engines.transformers_engine import TransformersEngine
from holodesk.daemon.engines.transformers_options import TransformersSettings
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.policies.registry import PolicyConfigError, create_policy
from tests.daemon.support import GUARD_S, running_daemon
from tests.engines.support import (
    KeepOpen,
    assert_failed_unparseable,
    chat_request,
    eventually,
    gibberish_session,
    png,
    tiny_dialect,
)
from tests.support.tiny_models import (
    TinyModel,
    tiny_nemotron_vl_for_transformers,
)

torch = pytest.importorskip("torch", reason="needs torch (holodesk-daemon[transformers])")
pytest.importorskip("transformers", reason="needs transformers (holodesk-daemon[transformers])")

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]

# A 512x512 image: 32x32 patches of 16 px, pixel-shuffled 2x2 -> 256 <image> tokens,
# between <img> and </img>.
IMAGE_TOKENS = 256 + 2


@pytest.fixture(scope="module")
def tiny_path(tiny_model: TinyModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_nemotron_vl_for_transformers(tiny_model, tmp_path_factory.mktemp("tiny-tf"))


def settings(path: Path, **overrides: object) -> TransformersSettings:
    values: dict[str, object] = {"model": str(path), "device": "cpu", "trust_remote_code": True}
    values.update(overrides)
    return TransformersSettings(**values)  # type: ignore[arg-type]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine(tiny_path: Path) -> AsyncIterator[TransformersEngine]:
    engine = TransformersEngine(settings(tiny_path))
    started = time.perf_counter()
    await engine.start()
    print(f"\ntransformers engine start (import included): {time.perf_counter() - started:.1f} s")
    yield engine
    await engine.close()


def request(
    request_id: str,
    *,
    images: int = 1,
    max_tokens: int = 12,
    temperature: float = 0.0,
    seed: int | None = None,
) -> GenerationRequest:
    parts: tuple[ContentPart, ...] = (
        *(png(512, 512, i) for i in range(images)),
        TextPart("Open the menu."),
    )
    sampling = SamplingParams(max_tokens=max_tokens, temperature=temperature, seed=seed)
    return chat_request(request_id, parts, sampling)


async def test_images_reach_the_model_and_tokens_are_counted(engine: TransformersEngine) -> None:
    text_only = await engine.generate(request("img-0", images=0))
    one = await engine.generate(request("img-1", images=1))
    two = await engine.generate(request("img-2", images=2))
    assert one.prompt_tokens - text_only.prompt_tokens == IMAGE_TOKENS
    assert two.prompt_tokens - one.prompt_tokens == IMAGE_TOKENS
    for result in (text_only, one, two):
        assert 1 <= result.completion_tokens <= 12
        assert result.text
    assert engine.loaded.takes_images
    assert type(engine.loaded.model).__name__ == "NemotronH_Omni_Reasoning_V3"


async def test_greedy_repeats_and_seeded_sampling_repeats(engine: TransformersEngine) -> None:
    greedy = [await engine.generate(request(f"greedy-{i}", max_tokens=16)) for i in range(2)]
    assert greedy[0] == greedy[1]
    sampled = [
        await engine.generate(request(f"seeded-{i}", max_tokens=16, temperature=1.0, seed=7))
        for i in range(2)
    ]
    assert sampled[0] == sampled[1]
    # 16 tokens drawn at temperature 1 from ~1k tokens: not the greedy ones.
    assert sampled[0].text != greedy[0].text


async def test_max_new_tokens_caps_every_request(tiny_path: Path) -> None:
    capped = TransformersEngine(settings(tiny_path, max_new_tokens=3))
    await capped.start()
    try:
        result = await capped.generate(request("capped", max_tokens=50))
    finally:
        await capped.close()
    assert result.completion_tokens == 3


async def test_abort_stops_a_running_generation(engine: TransformersEngine) -> None:
    task = asyncio.create_task(engine.generate(request("abort-me", max_tokens=100_000)))
    await eventually(lambda: engine.running == "abort-me", "generation running")
    await engine.abort("abort-me")
    with pytest.raises(EngineError, match="abort-me was aborted"):
        await asyncio.wait_for(task, GUARD_S)
    assert "abort-me" in engine.aborted
    assert not engine.inflight
    # The worker is free again: the next request runs.
    assert (await engine.generate(request("after-abort"))).completion_tokens >= 1


async def test_cancelling_the_task_stops_the_generation(engine: TransformersEngine) -> None:
    task = asyncio.create_task(engine.generate(request("cancel-me", max_tokens=100_000)))
    await eventually(lambda: engine.running == "cancel-me", "generation running")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert "cancel-me" in engine.aborted
    await eventually(lambda: engine.running is None, "the worker stopped generating")


async def test_a_queued_request_aborted_never_generates(engine: TransformersEngine) -> None:
    first = asyncio.create_task(engine.generate(request("first", max_tokens=100_000)))
    await eventually(lambda: engine.running == "first", "first generating")
    queued = asyncio.create_task(engine.generate(request("queued")))
    await eventually(lambda: "queued" in engine.inflight, "second request queued")
    await engine.abort("queued")
    await engine.abort("first")
    for task, name in ((first, "first"), (queued, "queued")):
        with pytest.raises(EngineError, match=f"{name} was aborted"):
            await asyncio.wait_for(task, GUARD_S)


async def test_an_undecodable_image_is_an_engine_error(engine: TransformersEngine) -> None:
    broken = GenerationRequest(
        "broken",
        (ChatMessage("user", (ImagePart(b"not a png", "image/png", 8, 8), TextPart("hi"))),),
    )
    with pytest.raises(EngineError, match="cannot decode"):
        await engine.generate(broken)


async def test_missing_transformers_names_the_extra(
    tiny_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # import now raises ImportError
    engine = TransformersEngine(settings(tiny_path))
    with pytest.raises(EngineError, match=r"holodesk-daemon\[transformers\]"):
        await engine.start()
    await engine.close()


async def test_a_checkpoint_transformers_has_no_class_for_is_explained(
    tiny_model: TinyModel,
) -> None:
    # The vLLM-layout folder: its config is remote code, its model is not.
    engine = TransformersEngine(settings(tiny_model.path))
    with pytest.raises(EngineError, match="has no AutoModelForCausalLM") as error:
        await engine.start()
    assert "NemotronH_Nano_VL_V2" in str(error.value)
    await engine.close()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
async def test_cuda_without_a_gpu_is_a_clear_error(tiny_path: Path) -> None:
    engine = TransformersEngine(settings(tiny_path, device="cuda"))
    with pytest.raises(EngineError, match="sees no CUDA GPU"):
        await engine.start()
    await engine.close()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
async def test_the_tiny_model_runs_on_a_gpu(tiny_path: Path) -> None:
    gpu = TransformersEngine(settings(tiny_path, device="cuda", dtype="bfloat16"))
    await gpu.start()
    try:
        assert gpu.loaded.device.type == "cuda"
        result = await gpu.generate(request("gpu", max_tokens=16))
    finally:
        await gpu.close()
    print(f"\non {torch.cuda.get_device_name(0)}: {result}")
    assert result.prompt_tokens > IMAGE_TOKENS
    assert 1 <= result.completion_tokens <= 16


async def test_settings_are_checked_before_loading() -> None:
    with pytest.raises(ValueError, match="device 'gpu'"):
        TransformersSettings(model="m", device="gpu")
    with pytest.raises(ValueError, match="dtype 'int8'"):
        TransformersSettings(model="m", dtype="int8")
    with pytest.raises(ValueError, match="max_new_tokens"):
        TransformersSettings(model="m", max_new_tokens=0)


async def test_the_policy_registry_builds_a_transformers_policy(tiny_path: Path) -> None:
    policy = create_policy(
        "transformers",
        {"model": str(tiny_path), "device": "cpu", "dtype": "bf16", "max_new_tokens": "64"},
    )
    assert isinstance(policy, ModelPolicy)
    assert isinstance(policy.engine, TransformersEngine)
    built = policy.engine.settings
    assert (built.device, built.dtype_name, built.max_new_tokens) == ("cpu", "bfloat16", 64)
    assert built.trust_remote_code is False  # only Holotron-12B defaults to true
    default = create_policy("transformers", {})
    assert isinstance(default, ModelPolicy)
    assert isinstance(default.engine, TransformersEngine)
    assert default.engine.settings.trust_remote_code is True
    with pytest.raises(PolicyConfigError, match="trust_remote_code must be true or false"):
        create_policy("transformers", {"trust_remote_code": "maybe"})
    with pytest.raises(PolicyConfigError, match="no option"):
        create_policy("transformers", {"tensor_parallel_size": "2"})


async def test_daemon_sessions_fail_cleanly_on_gibberish(
    engine: TransformersEngine, tmp_path: Path
) -> None:
    policy = ModelPolicy(tiny_dialect(tmp_path), KeepOpen(engine), name="tiny")
    async with running_daemon([policy]) as daemon:
        endings = await asyncio.gather(*(gibberish_session(daemon, i) for i in range(2)))
    assert_failed_unparseable(endings)
    assert not engine.inflight
