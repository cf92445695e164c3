"""The vllm engine for real: vLLM's CPU build on a tiny Holotron-architecture model.

One engine for the whole module (starting one costs ~30-60 s here). Random
weights give gibberish, so these tests check the path (images reach the model,
output streams, requests batch, aborts reach vLLM, the schema constrains the
output, the daemon turns gibberish into a clean FAILED), never the answer.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from PIL import Image

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.base import (
    ChatMessage,
    EngineError,
    GenerationRequest,
    GenerationResult,
    ImagePart,
    SamplingParams,
    TextPart,
)
from holodesk.daemon.engines.vllm_engine import VllmEngine
from holodesk.daemon.policies.model import ModelPolicy
from tests.daemon.support import GUARD_S, make_frame, running_daemon
from tests.engines.support import (
    ACTION_SCHEMA,
    TILE_TOKENS,
    KeepOpen,
    assert_failed_unparseable,
    chat_request,
    cpu_engine_args,
    eventually,
    gibberish_session,
    needs_vllm,
    png,
    request,
    tiny_dialect,
)
from tests.support.tiny_models import TinyModel

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
    needs_vllm,
]

# Keeps a random model's JSON short: no whitespace between tokens.
COMPACT = {"backend": "xgrammar", "disable_any_whitespace": True}


def engine_args(model: Path) -> dict[str, Any]:
    return cpu_engine_args(
        model,
        dtype="bfloat16",  # vLLM casts vision features to bf16
        max_num_seqs=16,
        images=3,
        trust_remote_code=True,  # the config class lives in the checkpoint
        structured_outputs_config=COMPACT,
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine(tiny_model: TinyModel, vllm_env: None) -> AsyncIterator[VllmEngine]:
    engine = VllmEngine(engine_args(tiny_model.path))
    started = time.perf_counter()
    await engine.start()
    print(f"\nvllm engine start (import included): {time.perf_counter() - started:.1f} s")
    yield engine
    await engine.close()


async def timed(what: str, awaitable: Awaitable[GenerationResult]) -> GenerationResult:
    started = time.perf_counter()
    result = await awaitable
    print(f"\n{what}: {time.perf_counter() - started:.2f} s, {result}")
    return result


async def test_images_reach_the_model_and_tokens_are_counted(engine: VllmEngine) -> None:
    text_only = await timed("no image", engine.generate(request("img-0", images=0)))
    one = await timed("1 image", engine.generate(request("img-1", images=1)))
    two = await timed("2 images", engine.generate(request("img-2", images=2)))
    # Each 320x320 image is one tile: 256 <image> tokens between <img> and </img>.
    assert one.prompt_tokens - text_only.prompt_tokens == TILE_TOKENS
    assert two.prompt_tokens - one.prompt_tokens == TILE_TOKENS
    for result in (text_only, one, two):
        assert 1 <= result.completion_tokens <= 12
        assert result.text


async def test_an_image_named_by_its_content_is_processed_once_under_that_name(
    engine: VllmEngine,
) -> None:
    """The daemon names each image by its content (multi_modal_uuids): vLLM keys its
    processor cache on that name instead of hashing the pixels, so the 2nd and 3rd
    appearance of a screen in the sliding window are not processed again. The name
    changes nothing the model sees."""
    name = "holodesk-test-screen-7"
    named = (replace(png(320, 320, 7), content_id=name), TextPart("Open the menu."))
    unnamed = (png(320, 320, 7), TextPart("Open the menu."))
    sampling = SamplingParams(max_tokens=8)
    cache = engine.llm.renderer.mm_processor_cache
    assert cache is not None, "vLLM's multimodal processor cache is off"
    assert cache.is_cached([name]) == [False]
    first = await engine.generate(chat_request("named-1", named, sampling))
    assert cache.is_cached([name]) == [True]
    again = await engine.generate(chat_request("named-2", named, sampling))
    plain = await engine.generate(chat_request("unnamed", unnamed, sampling))
    assert first.text == again.text == plain.text


def counted(part: ImagePart, content_id: str, loads: list[str]) -> ImagePart:
    """The part as a lazy one (like the daemon's), counting each time it is decoded."""

    def load() -> Image.Image:
        loads.append(content_id)
        return part.pixels()

    return ImagePart(
        b"", part.mime_type, part.width, part.height, content_id=content_id, loader=load
    )


async def test_a_screen_vllm_has_processed_is_not_decoded_again(engine: VllmEngine) -> None:
    loads: list[str] = []
    sampling = SamplingParams(max_tokens=8)
    screen = png(320, 320, 11)

    def step(request_id: str) -> GenerationRequest:
        parts = (counted(screen, "holodesk-test-screen-11", loads), TextPart("Open the menu."))
        return chat_request(request_id, parts, sampling)

    first = await engine.generate(step("seen-1"))
    assert loads == ["holodesk-test-screen-11"]
    again = await engine.generate(step("seen-2"))
    assert loads == ["holodesk-test-screen-11"]  # sent by name: vLLM had it
    assert again.text == first.text


async def test_an_image_vllm_evicted_meanwhile_is_sent_again(
    engine: VllmEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM's cache is checked before the request goes in; if vLLM dropped an image in
    between, it refuses the request before starting it, and it goes again with the
    pixels. (Here vLLM is told every image is cached: the race, every time.)"""
    loads: list[str] = []
    monkeypatch.setattr(engine, "_cached_images", lambda: lambda ids: [True] * len(ids))
    parts = (counted(png(320, 320, 12), "holodesk-never-sent-12", loads), TextPart("Hi."))
    result = await engine.generate(chat_request("evicted", parts, SamplingParams(max_tokens=8)))
    assert result.text
    assert loads == ["holodesk-never-sent-12"]  # decoded once, for the second try


async def test_an_undecodable_image_is_an_engine_error(engine: VllmEngine) -> None:
    broken = GenerationRequest(
        "broken",
        (ChatMessage("user", (ImagePart(b"not a png", "image/png", 8, 8), TextPart("hi"))),),
    )
    with pytest.raises(EngineError, match="cannot decode"):
        await engine.generate(broken)


async def test_output_streams_and_joins_to_the_generated_text(engine: VllmEngine) -> None:
    deltas = [d async for d in engine.stream(request("stream-a", max_tokens=16))]
    assert len(deltas) > 1  # streamed, not one final answer
    assert deltas[-1].finish_reason in ("length", "stop")
    assert deltas[0].prompt_tokens is not None
    # Greedy decoding: the same request through generate() gives the same text.
    result = await engine.generate(request("stream-b", max_tokens=16))
    assert "".join(d.text for d in deltas) == result.text
    assert sum(d.token_count for d in deltas) == result.completion_tokens


async def test_concurrent_requests_all_complete(engine: VllmEngine) -> None:
    started = time.perf_counter()
    results = await asyncio.gather(
        *(engine.generate(request(f"many-{i}", seed=i)) for i in range(10))
    )
    print(f"\n10 concurrent requests: {time.perf_counter() - started:.2f} s")
    assert len({r.prompt_tokens for r in results}) == 1
    assert all(1 <= r.completion_tokens <= 12 for r in results)
    assert not engine.inflight


async def test_abort_stops_the_request_inside_vllm(engine: VllmEngine) -> None:
    task = asyncio.create_task(engine.generate(request("abort-me", max_tokens=4000)))
    await eventually(lambda: engine.llm.get_num_unfinished_requests() == 1, "request running")
    await engine.abort("abort-me")
    with pytest.raises(EngineError, match="abort-me was aborted"):
        await asyncio.wait_for(task, GUARD_S)
    assert engine.llm.get_num_unfinished_requests() == 0
    assert "abort-me" in engine.aborted


async def test_cancelling_the_task_aborts_the_request(engine: VllmEngine) -> None:
    task = asyncio.create_task(engine.generate(request("cancel-me", max_tokens=4000)))
    await eventually(lambda: engine.llm.get_num_unfinished_requests() == 1, "request running")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert "cancel-me" in engine.aborted
    await eventually(lambda: engine.llm.get_num_unfinished_requests() == 0, "vLLM aborted it")
    assert not engine.inflight


async def test_structured_decoding_gives_schema_valid_json(engine: VllmEngine) -> None:
    for i in range(3):
        result = await engine.generate(
            request(f"json-{i}", seed=i, max_tokens=64, schema=ACTION_SCHEMA)
        )
        value = json.loads(result.text)  # random weights, valid JSON all the same
        assert set(value) == {"action", "double"}
        assert value["action"] in ("click", "write", "scroll")
        assert isinstance(value["double"], bool)


async def test_the_dialect_schema_constrains_decoding(engine: VllmEngine) -> None:
    schema = get_dialect("holotron").step_schema()
    assert schema is not None
    result = await engine.generate(request("dialect-schema", max_tokens=8, schema=schema))
    assert result.text.startswith('{"')  # a JSON object from the first token


async def test_unknown_engine_args_are_listed(tiny_model: TinyModel, vllm_env: None) -> None:
    args = {**engine_args(tiny_model.path), "max_num_seq": 8, "no_such_arg": 1}
    broken = VllmEngine(args)
    with pytest.raises(EngineError) as error:
        await broken.start()
    message = str(error.value)
    assert "max_num_seq (did you mean max_num_seqs" in message
    assert "no_such_arg" in message


async def test_daemon_sessions_fail_cleanly_on_gibberish(
    engine: VllmEngine, tmp_path: Path
) -> None:
    policy = ModelPolicy(tiny_dialect(tmp_path), KeepOpen(engine), name="tiny")
    async with running_daemon([policy]) as daemon:
        started = time.perf_counter()
        endings = await asyncio.gather(*(gibberish_session(daemon, i) for i in range(8)))
        print(f"\n8 daemon sessions x 3 attempts: {time.perf_counter() - started:.2f} s")
    assert_failed_unparseable(endings)
    assert engine.llm.get_num_unfinished_requests() == 0


async def test_client_disconnect_aborts_the_request(engine: VllmEngine, tmp_path: Path) -> None:
    policy = ModelPolicy(tiny_dialect(tmp_path, 4000, name="long"), KeepOpen(engine), name="long")
    # Resume off, so the dropped session is removed rather than detached for a resume
    # (detaching aborts the request the same way: tests/daemon/test_daemon_resume.py).
    async with running_daemon([policy], resume_window_s=0) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        await stream.observe_nowait(make_frame("f", 400, 400))
        mine = f"{started.session_id}/"  # request ids: <session>/<step>/<attempt>
        await eventually(
            lambda: (
                any(r.startswith(mine) for r in engine.inflight)
                and engine.llm.get_num_unfinished_requests() == 1
            ),
            "the step's request running in vLLM",
        )
        stream.call.cancel()  # the client goes away mid-step
        await eventually(
            lambda: any(r.startswith(mine) for r in engine.aborted), "the engine saw the abort"
        )
        await eventually(lambda: engine.llm.get_num_unfinished_requests() == 0, "vLLM idle")
        await asyncio.wait_for(daemon.running.registry.wait_empty(), GUARD_S)
    assert not engine.inflight
