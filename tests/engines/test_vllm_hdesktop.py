"""The hdesktop step schema under vLLM's own structured decoding (xgrammar), on vLLM's
CPU build and the tiny Holotron-architecture model: vLLM compiles the schema, and
every answer it lets a model write is one the hdesktop dialect parses.

Random weights sample anything the grammar allows, so sampled (temperature 1, a seed
each) they visit many tools. Free strings are capped short in the copy of the schema
used here, only so that random answers end within a few hundred tokens on 2 cores.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.dialects.hdesktop.vocabulary import TOOL_NAMES
from holodesk.daemon.engines.base import GenerationRequest, SamplingParams, TextPart
from holodesk.daemon.engines.vllm_engine import VllmEngine
from holodesk.daemon.geometry import Size
from tests.engines.hdesktop_conversation import FRAME, conversation, short_dialect, short_strings
from tests.engines.support import TILE_TOKENS, chat_request, cpu_engine_args, needs_vllm, png
from tests.support.tiny_models import TinyModel

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
    needs_vllm,
]

H = get_dialect("hdesktop")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine(tiny_model: TinyModel, vllm_env: None) -> AsyncIterator[VllmEngine]:
    args = cpu_engine_args(
        tiny_model.path,
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


async def test_every_answer_vllm_constrains_to_the_schema_parses(engine: VllmEngine) -> None:
    schema = H.step_schema()
    assert schema is not None
    bounded = short_strings(schema)
    geometry = H.geometry(Size(1280, 800))
    tools: set[str] = set()
    for seed in range(12):
        sampling = SamplingParams(max_tokens=400, temperature=1.0, seed=seed)
        parts = (png(320, 320, seed), TextPart("Save the file."))
        result = await engine.generate(chat_request(f"hd-{seed}", parts, sampling, schema=bounded))
        # A whole JSON object (the grammar closed it), whose strings xgrammar lets hold
        # raw control characters: JSON's non-strict reading, as the dialect's.
        value = json.loads(result.text, strict=False)
        call = value["tool_call"]
        assert call["tool_name"] in TOOL_NAMES
        H.parse_step(result.text, geometry)  # never a DialectParseError
        tools.add(call["tool_name"])
    assert len(tools) >= 3, tools  # the grammar offered the tools, not one path


async def test_the_harness_conversation_renders_through_the_chat_template(
    engine: VllmEngine,
) -> None:
    """System, task, observations, assistant JSON turns and tool outputs, as the
    checkpoint's chat template renders them: three screenshots reach the model, and
    the constrained answer to it parses."""
    dialect = short_dialect()
    messages = conversation(dialect)
    assert [m.role for m in messages] == [
        "system", "user", "user", "assistant", "user", "user", "assistant", "user", "user",
    ]  # fmt: skip
    schema = short_strings(dialect.step_schema())
    sampling = SamplingParams(max_tokens=400, temperature=1.0, seed=7)
    result = await engine.generate(
        GenerationRequest("hd-conversation", messages, sampling, json_schema=schema)
    )
    assert result.prompt_tokens > 3 * TILE_TOKENS
    dialect.parse_step(result.text, dialect.geometry(FRAME))
