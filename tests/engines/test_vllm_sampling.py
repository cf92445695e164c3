"""Sampling on the vllm engine (vLLM's CPU build, the tiny Holotron-architecture model):
n candidates in one request, seeds that repeat, and one finite logprob per token.

Few and focused: each vLLM request costs seconds on two CPU cores."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from holodesk.daemon.engines.base import GenerationRequest, SamplingParams
from holodesk.daemon.engines.vllm_engine import VllmEngine
from tests.engines.support import cpu_engine_args, needs_vllm, request
from tests.support.tiny_models import TinyModel

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
    needs_vllm,
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine(tiny_model: TinyModel, vllm_env: None) -> AsyncIterator[VllmEngine]:
    args = cpu_engine_args(
        tiny_model.path, dtype="bfloat16", max_num_seqs=8, images=1, trust_remote_code=True
    )
    engine = VllmEngine(args)
    await engine.start()
    yield engine
    await engine.close()


def sampled(request_id: str, *, seed: int, n: int = 2, logprobs: bool = True) -> GenerationRequest:
    base = request(request_id, images=1, max_tokens=10)
    sampling = SamplingParams(max_tokens=10, temperature=1.0, seed=seed)
    return GenerationRequest(request_id, base.messages, sampling, n=n, logprobs=logprobs)


async def test_n_seeded_candidates_repeat_and_another_seed_differs(engine: VllmEngine) -> None:
    first = await engine.generate(sampled("seed-a", seed=21))
    again = await engine.generate(sampled("seed-b", seed=21))
    other = await engine.generate(sampled("seed-c", seed=22))
    for result in (first, again, other):
        assert len(result.all_samples) == 2
    texts = [s.token_ids for s in first.all_samples]
    assert texts == [s.token_ids for s in again.all_samples]
    # vLLM seeds the i-th sample with seed + i: the two candidates differ.
    assert texts[0] != texts[1]
    assert texts != [s.token_ids for s in other.all_samples]
    assert first.prompt_tokens > 0


async def test_each_token_comes_with_its_finite_logprob(engine: VllmEngine) -> None:
    result = await engine.generate(sampled("logprobs", seed=5, n=3))
    for sample in result.all_samples:
        assert 1 <= sample.completion_tokens <= 10
        assert len(sample.token_logprobs) == len(sample.token_ids) == sample.completion_tokens
        assert all(math.isfinite(v) and v <= 0 for v in sample.token_logprobs)
        assert sample.cumulative_logprob == pytest.approx(math.fsum(sample.token_logprobs))
    plain = await engine.generate(sampled("plain", seed=5, n=1, logprobs=False))
    (only,) = plain.all_samples
    assert only.token_logprobs == ()
    assert only.cumulative_logprob is None
    assert only.completion_tokens >= 1
