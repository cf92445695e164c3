"""The transformers engine's weight updates, on the tiny Holotron-architecture model.

Greedy output of random weights is gibberish but deterministic: new weights change
it, the same weights repeat it, and "the old weights still serve" is checked as the
same greedy tokens and logprobs as before. Candidate checkpoints are written here:
the hub file with perturbed values, a trainer's `save_pretrained` of a changed
model, PEFT adapters made on the tiny model and on one of another size, and broken
copies (missing, half-written, another shape or architecture).

Each test gets its own engine (its weights change), about a second after the first.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from holodesk.daemon.engines.base import (
    ContentPart,
    EngineError,
    GenerationRequest,
    GenerationResult,
    SamplingParams,
    TextPart,
)
from holodesk.daemon.engines.transformers_engine import TransformersEngine
from holodesk.daemon.engines.transformers_options import TransformersSettings
from holodesk.daemon.engines.weights import (
    CheckpointInvalidError,
    CheckpointNotFoundError,
    EngineClosingError,
    UpdatableEngine,
    UpdateBusyError,
    UpdateIneffectiveError,
    UpdateMode,
)
from holodesk.values.generation import VersionSpan
from tests.daemon.support import GUARD_S
from tests.engines.support import chat_request, eventually, png
from tests.support.checkpoints import (
    half_written,
    other_architecture,
    perturbed,
    without,
)
from tests.support.tiny_models import TinyModel, tiny_nemotron_vl_for_transformers

torch = pytest.importorskip("torch", reason="needs torch (holodesk-daemon[transformers])")
transformers = pytest.importorskip("transformers", reason="needs holodesk-daemon[transformers]")
peft = pytest.importorskip("peft", reason="needs peft (holodesk-daemon[transformers])")

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
    # A second adapter is loaded beside the first before the first is dropped.
    pytest.mark.filterwarnings("ignore:Already found a `peft_config`:UserWarning"),
]

# Long enough (~2.5 ms a token on a CPU) for an update's checks and load (~0.3 s) to
# happen while it runs; the tiny model's greedy text never ends before (checked).
LONG_TOKENS = 1000
# Tokens compared between a long generation and a short one of the same weights.
PREFIX = 16


@pytest.fixture(scope="module")
def tiny_path(tiny_model: TinyModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_nemotron_vl_for_transformers(tiny_model, tmp_path_factory.mktemp("tiny-tf"))


@pytest_asyncio.fixture(loop_scope="module")
async def engine(tiny_path: Path) -> AsyncIterator[TransformersEngine]:
    settings = TransformersSettings(model=str(tiny_path), device="cpu", trust_remote_code=True)
    engine = TransformersEngine(settings)
    await engine.start()
    yield engine
    await engine.close()


def ask(request_id: str, max_tokens: int = PREFIX, *parts: ContentPart) -> GenerationRequest:
    """Greedy, with token ids and logprobs."""
    content = (*parts, TextPart("Open the menu."))
    request = chat_request(request_id, content, SamplingParams(max_tokens))
    return dataclasses.replace(request, logprobs=True)


def greedy(result: GenerationResult) -> tuple[tuple[int, ...], tuple[float, ...]]:
    sample = result.samples[0]
    return sample.token_ids, sample.token_logprobs


def load_tiny(tiny_path: Path) -> Any:
    return transformers.AutoModelForImageTextToText.from_pretrained(
        str(tiny_path), trust_remote_code=True, dtype=torch.float32
    )


def lora_adapter(model: Any, folder: Path) -> Path:
    """A PEFT LoRA of random A and B (PEFT's default B = 0 would change nothing)."""
    config = peft.LoraConfig(
        r=4,
        target_modules=r".*language_model.*\.(q_proj|v_proj|in_proj|up_proj)",
        init_lora_weights=False,
    )
    wrapped = peft.get_peft_model(model, config)
    wrapped.save_pretrained(str(folder))
    wrapped.unload()
    return folder


async def test_new_weights_change_output_fingerprint_and_version(
    engine: TransformersEngine, tiny_path: Path, tmp_path: Path
) -> None:
    assert isinstance(engine, UpdatableEngine)
    assert engine.policy_version.number == 0
    before = await engine.generate(ask("before"))
    assert before.samples[0].versions == (VersionSpan(0, 0, before.completion_tokens),)

    update = await engine.update_weights(
        perturbed(tiny_path, tmp_path / "step-1"), UpdateMode.WAIT, label="step-1"
    )
    assert (update.previous.number, update.version.number) == (0, 1)
    assert update.version.label == "step-1"
    assert update.previous.checksum.startswith("sha256:")
    assert update.version.checksum.startswith("sha256:")
    assert update.version.checksum != update.previous.checksum
    assert 0 <= update.paused_seconds <= update.seconds
    assert (update.requests_in_flight, update.requests_retried) == (0, 0)
    assert engine.policy_version == update.version
    assert not engine.updating

    after = await engine.generate(ask("after"))
    assert after.samples[0].versions == (VersionSpan(1, 0, after.completion_tokens),)
    assert greedy(after)[0] != greedy(before)[0]
    # The same prompt, the same ids, whichever weights.
    assert after.prompt_token_ids == before.prompt_token_ids


async def test_a_trainers_save_pretrained_loads_as_from_pretrained_would(
    engine: TransformersEngine, tiny_path: Path, tmp_path: Path
) -> None:
    """transformers' names (split q/k/v in the vision tower, renamed language model)
    are written back under the hub's by save_pretrained, with parameters the hub
    file lacks: every tensor of the trainer's model ends up in the engine's."""
    trained = load_tiny(tiny_path)
    with torch.no_grad():
        for parameter in trained.parameters():
            parameter.mul_(1.5)
    trained.save_pretrained(str(tmp_path / "trained"))
    await engine.update_weights(tmp_path / "trained", UpdateMode.WAIT)
    served = engine.loaded.model.state_dict()
    for name, tensor in trained.state_dict().items():
        assert torch.equal(served[name], tensor), name


async def test_the_same_weights_are_an_ineffective_update(
    engine: TransformersEngine, tiny_path: Path
) -> None:
    before = await engine.generate(ask("before"))
    with pytest.raises(UpdateIneffectiveError, match=r"the weights did not change .*version 0"):
        await engine.update_weights(tiny_path, UpdateMode.WAIT)
    assert engine.policy_version.number == 0
    assert greedy(await engine.generate(ask("after"))) == greedy(before)


BAD_CHECKPOINTS: dict[str, tuple[Callable[[Path, Path], Path], type[Exception], str]] = {
    "missing": (lambda tiny, folder: folder / "nowhere", CheckpointNotFoundError, "does not exist"),
    "half-written": (half_written, CheckpointInvalidError, r"is half-written: its header names"),
    "other-shape": (
        lambda tiny, folder: perturbed(tiny, folder, language_model__lm_head__weight=(8, 64)),
        CheckpointInvalidError,
        r"has another shape: language_model\.lm_head\.weight \(8, 64\) where the serving",
    ),
    "other-architecture": (
        other_architecture,
        CheckpointInvalidError,
        r"is another architecture: Qwen2VLForConditionalGeneration, the serving model is",
    ),
    "tensors-missing": (
        lambda tiny, folder: without(perturbed(tiny, folder), "mlp1.1.weight"),
        CheckpointInvalidError,
        r"is not the serving model: 1 tensors missing \(mlp1\.1\.weight\)",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CHECKPOINTS))
async def test_a_bad_checkpoint_is_refused_and_the_old_weights_serve(
    engine: TransformersEngine, tiny_path: Path, tmp_path: Path, case: str
) -> None:
    make, error, message = BAD_CHECKPOINTS[case]
    before = await engine.generate(ask("before"))
    version = engine.policy_version
    with pytest.raises(error, match=message):
        await engine.update_weights(make(tiny_path, tmp_path / case), UpdateMode.WAIT)
    assert engine.policy_version == version
    assert not engine.updating
    assert greedy(await engine.generate(ask("after"))) == greedy(before)


async def test_lora_load_changes_output_and_unload_restores_the_base(
    engine: TransformersEngine, tiny_path: Path, tmp_path: Path
) -> None:
    adapter = lora_adapter(load_tiny(tiny_path), tmp_path / "lora")
    base = await engine.generate(ask("base"))

    loaded = await engine.load_adapter(adapter, "menu-lora", UpdateMode.WAIT)
    assert loaded.version.number == 1
    assert loaded.version.adapter == "menu-lora"
    assert loaded.version.checksum != loaded.previous.checksum
    through = await engine.generate(ask("lora"))
    assert greedy(through)[0] != greedy(base)[0]
    assert through.samples[0].versions[0].version == 1

    # The same adapter again changes nothing.
    with pytest.raises(UpdateIneffectiveError):
        await engine.load_adapter(adapter, "again", UpdateMode.WAIT)
    assert engine.policy_version.adapter == "menu-lora"

    unloaded = await engine.unload_adapter(UpdateMode.WAIT)
    assert (unloaded.version.number, unloaded.version.adapter) == (2, "")
    # The base weights, under the base's fingerprint, with PEFT's emptied wrappers around.
    assert unloaded.version.checksum == loaded.previous.checksum
    assert greedy(await engine.generate(ask("unloaded"))) == greedy(base)
    with pytest.raises(CheckpointInvalidError, match="no adapter serves"):
        await engine.unload_adapter(UpdateMode.WAIT)


async def test_a_lora_for_another_base_is_refused(
    engine: TransformersEngine, tiny_path: Path, tmp_path: Path
) -> None:
    """Made by PEFT on a model of the same architecture and twice the width."""
    config = transformers.AutoConfig.from_pretrained(str(tiny_path), trust_remote_code=True)
    config.text_config.hidden_size *= 2
    wider = transformers.AutoModelForImageTextToText.from_config(config)
    adapter = lora_adapter(wider, tmp_path / "wide-lora")
    before = await engine.generate(ask("before"))
    with pytest.raises(
        CheckpointInvalidError,
        match=r"is a LoRA for another base \(trained on .*\): module language_model\.model\."
        r"layers\.\d\.mixer\.\w+ is \(\d+, 64\) in the serving model; the adapter's lora_A "
        r"is \(4, 128\)",
    ):
        await engine.load_adapter(adapter, "wide", UpdateMode.WAIT)
    assert engine.policy_version.number == 0
    assert greedy(await engine.generate(ask("after"))) == greedy(before)


async def test_a_second_update_while_one_runs_is_busy(
    engine: TransformersEngine, tiny_path: Path, tmp_path: Path
) -> None:
    first, second = await asyncio.gather(
        engine.update_weights(perturbed(tiny_path, tmp_path / "a", seed=1), UpdateMode.WAIT),
        engine.update_weights(perturbed(tiny_path, tmp_path / "b", seed=2), UpdateMode.WAIT),
        return_exceptions=True,
    )
    assert not isinstance(first, BaseException)
    assert first.version.number == 1
    assert isinstance(second, UpdateBusyError)
    assert "another update" in str(second)
    assert engine.policy_version == first.version


async def test_no_update_after_close(tiny_path: Path, tmp_path: Path) -> None:
    settings = TransformersSettings(model=str(tiny_path), device="cpu", trust_remote_code=True)
    engine = TransformersEngine(settings)
    await engine.start()
    await engine.close()
    with pytest.raises(EngineClosingError, match="shutting down"):
        await engine.update_weights(perturbed(tiny_path, tmp_path / "late"), UpdateMode.WAIT)


async def test_wait_finishes_in_flight_on_old_weights_and_queued_on_new(
    engine: TransformersEngine, tiny_path: Path, tmp_path: Path
) -> None:
    old = await engine.generate(ask("old"))
    candidate = perturbed(tiny_path, tmp_path / "new")
    running = asyncio.create_task(engine.generate(ask("running", LONG_TOKENS)))
    await eventually(lambda: engine.running == "running", "the long generation running")
    queued = asyncio.create_task(engine.generate(ask("queued")))
    await eventually(lambda: "queued" in engine.inflight, "a request queued behind it")
    update = await engine.update_weights(candidate, UpdateMode.WAIT)
    long, behind = await asyncio.wait_for(asyncio.gather(running, queued), GUARD_S)

    assert update.requests_in_flight == 2
    assert update.requests_retried == 0
    assert long.completion_tokens == LONG_TOKENS
    assert long.samples[0].versions == (VersionSpan(0, 0, LONG_TOKENS),)
    assert greedy(long)[0][:PREFIX] == greedy(old)[0]
    new = await engine.generate(ask("new"))
    assert behind.samples[0].versions[0].version == 1
    assert greedy(behind) == greedy(new)


@pytest.mark.parametrize("mode", [UpdateMode.ABORT, UpdateMode.KEEP])
async def test_abort_reruns_in_flight_on_new_weights_keep_waits(
    engine: TransformersEngine, tiny_path: Path, tmp_path: Path, mode: UpdateMode
) -> None:
    """ABORT: the running generation stops and runs again, whole, on the new weights,
    inside the same generate(). KEEP: transformers cannot switch midway: as WAIT."""
    old = await engine.generate(ask("old"))
    candidate = perturbed(tiny_path, tmp_path / "new")
    running = asyncio.create_task(engine.generate(ask("running", LONG_TOKENS)))
    await eventually(lambda: engine.running == "running", "the long generation running")
    update = await engine.update_weights(candidate, mode)
    result = await asyncio.wait_for(running, GUARD_S)
    new = await engine.generate(ask("new"))

    assert result.completion_tokens == LONG_TOKENS
    assert update.requests_in_flight == 1
    if mode is UpdateMode.ABORT:
        assert update.requests_retried == 1
        assert result.samples[0].versions == (VersionSpan(1, 0, LONG_TOKENS),)
        assert greedy(result)[0][:PREFIX] == greedy(new)[0]
    else:
        assert update.requests_retried == 0
        assert result.samples[0].versions == (VersionSpan(0, 0, LONG_TOKENS),)
        assert greedy(result)[0][:PREFIX] == greedy(old)[0]
    assert greedy(new)[0] != greedy(old)[0]


async def test_a_request_aborted_during_an_update_is_aborted_and_the_update_lands(
    engine: TransformersEngine, tiny_path: Path, tmp_path: Path
) -> None:
    candidate = perturbed(tiny_path, tmp_path / "new")
    running = asyncio.create_task(engine.generate(ask("running", LONG_TOKENS)))
    await eventually(lambda: engine.running == "running", "the long generation running")
    queued = asyncio.create_task(engine.generate(ask("queued")))
    await eventually(lambda: "queued" in engine.inflight, "a request queued behind it")
    update = asyncio.create_task(engine.update_weights(candidate, UpdateMode.WAIT))
    await eventually(lambda: engine.updating, "the update running")
    await engine.abort("queued")
    with pytest.raises(EngineError, match="queued was aborted"):
        await asyncio.wait_for(queued, GUARD_S)
    assert (await asyncio.wait_for(running, GUARD_S)).samples[0].versions[0].version == 0
    assert (await asyncio.wait_for(update, GUARD_S)).version.number == 1


async def test_prompt_token_ids_are_the_processors_input_ids(
    engine: TransformersEngine,
) -> None:
    """With an image: the <image> placeholders included, as generate() got them."""
    result = await engine.generate(ask("image", 4, png(512, 512, 0)))
    ids = result.prompt_token_ids
    assert len(ids) == result.prompt_tokens
    tokenizer = engine.loaded.tokenizer
    image_id = tokenizer.convert_tokens_to_ids("<image>")
    # 512x512: 32x32 patches of 16 px, pixel-shuffled 2x2.
    assert ids.count(image_id) == 256
    assert ids.count(tokenizer.convert_tokens_to_ids("<img>")) == 1
    text = tokenizer.decode([i for i in ids if i != image_id])
    assert "Open the menu." in text
    assert text.rstrip().endswith("assistant")
