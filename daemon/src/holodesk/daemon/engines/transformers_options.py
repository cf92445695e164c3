"""Settings of the transformers engine, checked before anything heavy is imported.

`device`: "auto" (the first CUDA GPU when torch sees one, else the CPU), "cpu",
"cuda", "cuda:N" or "mps". `dtype`: "auto" (float32 on the CPU, where half
precision is slow or unsupported; the checkpoint's own dtype on a GPU), or
float32/bfloat16/float16 and their short names. `device_map` (needs accelerate)
is passed through to `from_pretrained` and spreads a model over several devices;
`device` is then not used.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DTYPES = {
    "auto": "auto",
    "float32": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
}
_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True)
class TransformersSettings:
    model: str
    device: str = "auto"
    dtype: str = "auto"
    # "auto", "balanced", a device name, or a module -> device mapping.
    device_map: str | dict[str, Any] | None = None
    trust_remote_code: bool = False
    # Caps every request's max_tokens (None: the request's own limit).
    max_new_tokens: int | None = None
    revision: str | None = None
    # Extra keyword arguments for from_pretrained (attn_implementation, ...).
    model_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("the transformers engine needs a model (a hub id or a folder)")
        if not _DEVICE.match(self.device):
            raise ValueError(f"device {self.device!r} is not auto, cpu, cuda, cuda:N or mps")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype {self.dtype!r} is not one of {', '.join(DTYPES)}")
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, not {self.max_new_tokens}")

    @property
    def dtype_name(self) -> str:
        return DTYPES[self.dtype]


def flag(options: Mapping[str, str], key: str, default: bool) -> bool:
    text = options.get(key)
    if text is None:
        return default
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"{key} must be true or false, not {text!r}")


def settings_from_options(options: Mapping[str, str], default_model: str) -> TransformersSettings:
    """Settings from the CLI's string options (--policy-opt KEY=VALUE)."""
    model = options.get("model") or default_model
    max_new = options.get("max_new_tokens")
    try:
        max_new_tokens = int(max_new) if max_new else None
    except ValueError:
        raise ValueError(f"max_new_tokens must be a whole number, not {max_new!r}") from None
    device_map: str | dict[str, Any] | None = options.get("device_map") or None
    if isinstance(device_map, str) and device_map.lstrip().startswith("{"):
        try:
            device_map = json.loads(device_map)
        except ValueError as exc:
            raise ValueError(f"device_map is not JSON: {exc}") from None
    model_kwargs: dict[str, Any] = {}
    if options.get("attn_implementation"):
        model_kwargs["attn_implementation"] = options["attn_implementation"]
    return TransformersSettings(
        model=model,
        device=(options.get("device") or "auto").strip().lower(),
        dtype=(options.get("dtype") or "auto").strip().lower(),
        device_map=device_map,
        # Holotron-12B's checkpoint brings its own config and model code.
        trust_remote_code=flag(options, "trust_remote_code", model == default_model),
        max_new_tokens=max_new_tokens,
        revision=options.get("revision") or None,
        model_kwargs=model_kwargs,
    )
