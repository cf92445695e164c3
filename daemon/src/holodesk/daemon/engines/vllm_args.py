"""vLLM engine arguments from the daemon's string options, checked against vLLM.

`--policy-opt key=value` gives strings; vLLM's `AsyncEngineArgs` wants typed
values. Values are read as JSON where they parse (`8` -> 8, `0.9` -> 0.9,
`true` -> True, `null` -> None, `{"image": 3}` -> a dict, `"8"` -> the string
"8"), and as plain strings otherwise (`Hcompany/Holotron-12B`, `bfloat16`).
Keys use vLLM's Python names; the CLI spelling (`max-num-seqs`) is accepted too.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Collection, Mapping
from typing import Any


class EngineArgsError(ValueError):
    """Engine arguments vLLM does not know, or values that cannot be read."""


_WORDS = {"true": True, "false": False, "none": None, "null": None}


def parse_option_value(text: str) -> Any:
    """A --policy-opt value as the Python value vLLM expects (see the module doc)."""
    stripped = text.strip()
    lowered = stripped.lower()
    if lowered in _WORDS:
        return _WORDS[lowered]
    try:
        return json.loads(stripped)
    except ValueError:
        if stripped[:1] in ("{", "["):
            raise EngineArgsError(f"{text!r} looks like JSON but does not parse") from None
        return text


def normalize_key(key: str) -> str:
    return key.strip().replace("-", "_")


def engine_args_from_options(
    options: Mapping[str, str], *, exclude: Collection[str] = ()
) -> dict[str, Any]:
    """Every option not in `exclude` (the policy's own options), parsed."""
    return {
        normalize_key(key): parse_option_value(value)
        for key, value in options.items()
        if key not in exclude
    }


def engine_arg_names() -> frozenset[str]:
    """The fields of the installed vLLM's AsyncEngineArgs (imports vLLM)."""
    from vllm.engine.arg_utils import AsyncEngineArgs

    return frozenset(f.name for f in dataclasses.fields(AsyncEngineArgs) if f.init)


def check_engine_args(args: Mapping[str, Any], known: Collection[str]) -> None:
    """Raise EngineArgsError naming every unknown key, with the nearest known names."""
    unknown = sorted(set(args) - set(known))
    if not unknown:
        return
    hints = []
    for key in unknown:
        close = difflib.get_close_matches(key, list(known), n=3)
        hints.append(f"{key} (did you mean {', '.join(close)}?)" if close else key)
    raise EngineArgsError(
        f"unknown vLLM engine argument(s): {'; '.join(hints)}. "
        "Engine arguments are the fields of vllm.engine.arg_utils.AsyncEngineArgs "
        "(the `vllm serve --help` options, with _ for -)"
    )


DEFAULT_MODEL = "Hcompany/Holotron-12B"
# The vllm policy's own options; every other --policy-opt is an engine argument.
POLICY_OPTIONS = frozenset({"model", "dialect", "dialect_file"})


def vllm_engine_args(options: Mapping[str, str], *, images_per_prompt: int) -> dict[str, Any]:
    """Engine arguments for the vllm policy: defaults, then the options given.

    Defaults: `model` Holotron-12B; `limit_mm_per_prompt` as many images as the
    dialect keeps in a prompt; `trust_remote_code` for Holotron-12B only, whose
    checkpoint's config class is code (NemotronH_Nano_VL_V2 has none in vLLM).
    """
    model = options.get("model") or DEFAULT_MODEL
    args: dict[str, Any] = {
        "model": model,
        "limit_mm_per_prompt": {"image": images_per_prompt},
    }
    if model == DEFAULT_MODEL:
        args["trust_remote_code"] = True
    args.update(engine_args_from_options(options, exclude=POLICY_OPTIONS))
    return args
