"""Sampling on the transformers engine, on the tiny Holotron-architecture model:
seeds repeat, n candidates come back, and each sampled token's log-probability is
the model's own (checked against a teacher-forced forward pass)."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from holodesk.daemon.engines.base import ContentPart, GenerationRequest, SamplingParams, TextPart
from holodesk.daemon.engines.transformers_engine import TransformersEngine
from holodesk.daemon.engines.transformers_options import TransformersSettings
from tests.engines.support import chat_request, png
from tests.support.tiny_models import TinyModel, tiny_nemotron_vl_for_transformers

torch = pytest.importorskip("torch", reason="needs torch (holodesk-daemon[transformers])")
pytest.importorskip("transformers", reason="needs transformers (holodesk-daemon[transformers])")

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def tiny_path(tiny_model: TinyModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_nemotron_vl_for_transformers(tiny_model, tmp_path_factory.mktemp("tiny-tf"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine(tiny_path: Path) -> AsyncIterator[TransformersEngine]:
    settings = TransformersSettings(model=str(tiny_path), device="cpu", trust_remote_code=True)
    engine = TransformersEngine(settings)
    await engine.start()
    yield engine
    await engine.close()


def request(
    request_id: str,
    *,
    n: int = 1,
    seed: int | None = None,
    temperature: float = 1.0,
    image: bool = True,
    max_tokens: int = 12,
) -> GenerationRequest:
    parts: tuple[ContentPart, ...] = (*((png(512, 512),) if image else ()), TextPart("Go."))
    sampling = SamplingParams(max_tokens=max_tokens, temperature=temperature, seed=seed)
    base = chat_request(request_id, parts, sampling)
    return GenerationRequest(base.request_id, base.messages, sampling, n=n, logprobs=True)


async def test_the_same_seed_repeats_and_another_seed_differs(engine: TransformersEngine) -> None:
    first = await engine.generate(request("a", n=2, seed=11))
    again = await engine.generate(request("b", n=2, seed=11))
    other = await engine.generate(request("c", n=2, seed=12))
    texts = [s.text for s in first.all_samples]
    assert texts == [s.text for s in again.all_samples]
    assert [s.token_logprobs for s in first.all_samples] == [
        s.token_logprobs for s in again.all_samples
    ]
    # 12 tokens drawn at temperature 1 from ~1k: another seed draws others.
    assert texts != [s.text for s in other.all_samples]


async def test_n_candidates_with_one_logprob_per_token(engine: TransformersEngine) -> None:
    result = await engine.generate(request("n", n=3, seed=1))
    assert len(result.all_samples) == 3
    assert len({s.token_ids for s in result.all_samples}) > 1  # sampled apart
    for sample in result.all_samples:
        assert 1 <= sample.completion_tokens <= 12
        assert len(sample.token_logprobs) == len(sample.token_ids) == sample.completion_tokens
        assert all(math.isfinite(v) and v <= 0 for v in sample.token_logprobs)
        assert sample.cumulative_logprob == pytest.approx(math.fsum(sample.token_logprobs))
    assert result.text == result.all_samples[0].text


async def test_logprobs_are_the_models_own(engine: TransformersEngine) -> None:
    """Teacher-force prompt + sampled tokens: the log-softmax at each position gives back
    the logprob the engine reported for the token sampled there."""
    result = await engine.generate(request("tf", seed=3, image=False, max_tokens=8))
    (sample,) = result.all_samples
    loaded = engine.loaded
    chat: list[dict[str, Any]] = [
        {"role": "system", "content": "You control a computer."},
        {"role": "user", "content": [{"type": "text", "text": "Go."}]},
    ]
    prompt = loaded.tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    prompt_ids = loaded.tokenizer([str(prompt)], add_special_tokens=False)["input_ids"][0]
    assert len(prompt_ids) == result.prompt_tokens
    ids = torch.tensor([[*prompt_ids, *sample.token_ids]])
    with torch.inference_mode():
        logits = loaded.model(input_ids=ids).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    start = len(prompt_ids) - 1
    expected = [float(logprobs[start + i, token]) for i, token in enumerate(sample.token_ids)]
    assert sample.token_logprobs == pytest.approx(expected, abs=1e-3)
