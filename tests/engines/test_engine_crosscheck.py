"""Cross-check: the vllm and transformers engines agree, greedy, token for token.

On a tiny random Qwen2-VL in float32 (a native architecture of both, built here;
the tiny Holotron-architecture model cannot serve: vLLM runs it only in
bfloat16, and transformers sizes its images differently), the same request with
an image gives the same prompt token count (the image expanded alike), the same
number of generated tokens and the same text. Any difference in how the
engines render the chat template, place the image, or decode greedily fails.

Text is compared up to one trailing U+FFFD: when the last token ends in the
middle of a UTF-8 character, vLLM's incremental detokenizer holds those bytes
back while transformers' decode() shows a replacement character; the token
counts still have to match exactly.

One vLLM engine for the module, in one process (the settings of
test_vllm_engine.py); it costs ~15-60 s to start on 2 cores, the requests ~1 s.
"""

from __future__ import annotations

import io
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from PIL import Image, ImageDraw

from holodesk.daemon.engines.base import (
    ContentPart,
    GenerationRequest,
    GenerationResult,
    ImagePart,
    SamplingParams,
    TextPart,
)
from holodesk.daemon.engines.transformers_engine import TransformersEngine
from holodesk.daemon.engines.transformers_options import TransformersSettings
from holodesk.daemon.engines.vllm_engine import VllmEngine
from tests.engines.support import chat_request, cpu_engine_args, needs_vllm
from tests.support.tiny_models import TinyQwenModel, build_tiny_qwen2_vl

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
    needs_vllm,
]

REPLACEMENT = "\ufffd"


def vllm_args(model: Path) -> dict[str, Any]:
    # float32, as transformers runs it: no rounding differences.
    return cpu_engine_args(model, dtype="float32", max_num_seqs=4, images=2)


@pytest.fixture(scope="module")
def tiny_qwen(tmp_path_factory: pytest.TempPathFactory) -> TinyQwenModel:
    return build_tiny_qwen2_vl(tmp_path_factory.mktemp("tiny-qwen2-vl"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engines(
    tiny_qwen: TinyQwenModel, vllm_env: None
) -> AsyncIterator[tuple[VllmEngine, TransformersEngine]]:
    vllm = VllmEngine(vllm_args(tiny_qwen.path))
    local = TransformersEngine(
        TransformersSettings(model=str(tiny_qwen.path), device="cpu", dtype="float32")
    )
    started = time.perf_counter()
    await vllm.start()
    print(f"\nvllm engine start: {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    await local.start()
    print(f"transformers engine start: {time.perf_counter() - started:.1f} s")
    try:
        yield vllm, local
    finally:
        await local.close()
        await vllm.close()


def screenshot(width: int, height: int, seed: int) -> ImagePart:
    image = Image.new("RGB", (width, height), (240, 240, 240))
    draw = ImageDraw.Draw(image)
    draw.rectangle(
        (width // 4, height // 4, width // 2, height // 2), fill=(seed * 53 % 256, 90, 200)
    )
    draw.text((10, 10), f"screen {seed}", fill=(0, 0, 0))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return ImagePart(buffer.getvalue(), "image/png", width, height)


def step(request_id: str, parts: tuple[ContentPart, ...], system: bool = True) -> GenerationRequest:
    return chat_request(request_id, parts, SamplingParams(max_tokens=32), system=system)


def agree(a: GenerationResult, b: GenerationResult) -> bool:
    return (
        a.prompt_tokens == b.prompt_tokens
        and a.completion_tokens == b.completion_tokens
        and a.text.removesuffix(REPLACEMENT) == b.text.removesuffix(REPLACEMENT)
    )


CASES: dict[str, tuple[ContentPart, ...]] = {
    "one screenshot, 640x400": (screenshot(640, 400, 1), TextPart("Click the blue box.")),
    "text then a 1280x800 screenshot": (
        TextPart("Task: open the menu.\n"),
        screenshot(1280, 800, 2),
    ),
    "two screenshots": (
        screenshot(320, 240, 3),
        screenshot(300, 200, 4),
        TextPart("What changed?"),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_greedy_outputs_agree(
    engines: tuple[VllmEngine, TransformersEngine], case: str
) -> None:
    vllm, local = engines
    request = step(f"cross-{case}", CASES[case], system=case != "two screenshots")
    started = time.perf_counter()
    remote = await vllm.generate(request)
    middle = time.perf_counter()
    here = await local.generate(request)
    print(
        f"\n{case}: vllm {middle - started:.2f} s, transformers "
        f"{time.perf_counter() - middle:.2f} s\n  vllm:         {remote}\n  transformers: {here}"
    )
    assert remote.prompt_tokens > 64  # the image's tokens are in the prompt
    assert remote.completion_tokens >= 1
    assert agree(remote, here), f"vllm {remote} != transformers {here}"


async def test_the_comparison_can_fail(engines: tuple[VllmEngine, TransformersEngine]) -> None:
    """A different image gives a different prompt or answer: agreement is not vacuous."""
    vllm, local = engines
    a = await vllm.generate(step("differ-a", (screenshot(640, 400, 1), TextPart("Hi."))))
    b = await local.generate(step("differ-b", (screenshot(1280, 800, 5), TextPart("Hi."))))
    assert not agree(a, b)
