"""Policies by name, built from string options (the CLI's --policy and --policy-opt).

`scripted` is registered here; the OCR baseline and the model policies (vllm,
openai, transformers) register their own factories the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from holodesk.daemon.dialects import DEFAULT_DIALECT, Dialect, get_dialect, load_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.base import Policy
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.policies.ocr import policy as ocr

PolicyFactory = Callable[[Mapping[str, str]], Policy]


class PolicyConfigError(ValueError):
    """A policy cannot be built from the options given."""


@dataclass(frozen=True)
class PolicyEntry:
    name: str
    description: str
    factory: PolicyFactory
    # Option name -> help text, for --help and error messages.
    options: Mapping[str, str]
    # Options beyond `options` go to the factory, which checks them (vLLM engine args).
    open_options: bool = False


_REGISTRY: dict[str, PolicyEntry] = {}


def register_policy(entry: PolicyEntry) -> None:
    _REGISTRY[entry.name] = entry


def policy_entries() -> tuple[PolicyEntry, ...]:
    return tuple(_REGISTRY[name] for name in sorted(_REGISTRY))


def create_policy(name: str, options: Mapping[str, str]) -> Policy:
    entry = _REGISTRY.get(name)
    if entry is None:
        known = ", ".join(sorted(_REGISTRY))
        raise PolicyConfigError(f"unknown policy {name!r}; available: {known}")
    unknown = set(options) - set(entry.options)
    if unknown and not entry.open_options:
        raise PolicyConfigError(
            f"policy {name!r} has no option(s) {sorted(unknown)}; it takes {sorted(entry.options)}"
        )
    try:
        return entry.factory(options)
    except (OSError, ValueError) as exc:
        raise PolicyConfigError(f"policy {name!r}: {exc}") from exc


def dialect_from_options(options: Mapping[str, str]) -> Dialect:
    """`dialect_file` (JSON/TOML over a built-in) wins over `dialect` (a built-in name)."""
    if options.get("dialect_file"):
        return load_dialect(options["dialect_file"])
    return get_dialect(options.get("dialect") or DEFAULT_DIALECT)


def _scripted(options: Mapping[str, str]) -> Policy:
    script = options.get("script")
    if not script:
        raise PolicyConfigError("the scripted policy needs a script (--script FILE)")
    dialect = dialect_from_options(options)
    return ModelPolicy(
        dialect,
        ScriptedEngine.from_file(script),
        name="scripted",
        description=f"canned {dialect.name}-format outputs from {script}",
    )


register_policy(
    PolicyEntry(
        name="scripted",
        description="replays model outputs from a JSON file through a dialect's parser",
        factory=_scripted,
        options={
            "script": "JSON file: a list of model outputs, one per model call",
            "dialect": f"built-in dialect name (default {DEFAULT_DIALECT})",
            "dialect_file": "JSON/TOML dialect file overriding a built-in",
        },
    )
)

register_policy(PolicyEntry("ocr", ocr.DESCRIPTION, ocr.create_ocr_policy, ocr.OPTIONS))


def _openai(options: Mapping[str, str]) -> Policy:
    # Imported here: httpx is loaded only by daemons that use a remote server.
    from holodesk.daemon.engines.openai_engine import engine_from_options

    engine = engine_from_options(options)
    dialect = dialect_from_options(options)
    return ModelPolicy(
        dialect,
        engine,
        name="openai",
        description=f"{dialect.name} dialect on {engine.model or 'the model'} at {engine.base_url}",
    )


register_policy(
    PolicyEntry(
        name="openai",
        description="a model behind any OpenAI-compatible server (vllm serve, SGLang, a router)",
        factory=_openai,
        options={
            "base_url": "API root of the server, e.g. http://gpu-host:8000/v1 (required)",
            "model": "served model name (default: the server's only model)",
            "api_key_env": "environment variable holding the API key",
            "dialect": f"built-in dialect name (default {DEFAULT_DIALECT})",
            "dialect_file": "JSON/TOML dialect file overriding a built-in",
            "timeout_s": "seconds to wait for one answer (default 120)",
            "max_retries": "retries on 408/429/5xx, dropped connections, timeouts (default 3)",
            "max_connections": "keep-alive connections to the server (default 256)",
            "start_timeout_s": "how long to wait for the server to come up (default 120)",
            "structured_output": "response_format (default), guided_json (old vLLM) or none",
            "extra_body": "JSON object merged into every request body (e.g. top_k)",
            "version_source": "where each step's policy version comes from: auto (default: "
            "vLLM's /weight_info if served, else the model name), weight_info, model, off",
            "version_url": "where /weight_info is (default: beside base_url's /v1)",
            "version_pattern": "regex reading the version number from a label (step-(\\d+))",
        },
    )
)


def _vllm(options: Mapping[str, str]) -> Policy:
    # Imported here, and vLLM itself only in start(): a daemon without vLLM still runs.
    from holodesk.daemon.engines.vllm_args import vllm_engine_args
    from holodesk.daemon.engines.vllm_engine import VllmEngine

    dialect = dialect_from_options(options)
    args = vllm_engine_args(options, images_per_prompt=dialect.spec.frames_kept)
    return ModelPolicy(
        dialect,
        VllmEngine(args),
        name="vllm",
        description=f"{dialect.name} dialect on {args['model']} in vLLM (in process)",
    )


register_policy(
    PolicyEntry(
        name="vllm",
        description="a model in vLLM inside the daemon (default Hcompany/Holotron-12B)",
        factory=_vllm,
        options={
            "model": "hub id or folder (default Hcompany/Holotron-12B)",
            "dialect": f"built-in dialect name (default {DEFAULT_DIALECT})",
            "dialect_file": "JSON/TOML dialect file overriding a built-in",
            "<engine arg>": "any vLLM engine argument, e.g. tensor_parallel_size=2, "
            "max_num_seqs=64, limit_mm_per_prompt='{\"image\": 3}' (JSON values)",
        },
        open_options=True,
    )
)


def _transformers(options: Mapping[str, str]) -> Policy:
    # Imported here, and torch/transformers only in start(): a daemon without them still runs.
    from holodesk.daemon.engines.transformers_engine import TransformersEngine
    from holodesk.daemon.engines.transformers_options import settings_from_options
    from holodesk.daemon.engines.vllm_args import DEFAULT_MODEL

    dialect = dialect_from_options(options)
    settings = settings_from_options(options, DEFAULT_MODEL)
    return ModelPolicy(
        dialect,
        TransformersEngine(settings),
        name="transformers",
        description=f"{dialect.name} dialect on {settings.model} in transformers (local)",
    )


register_policy(
    PolicyEntry(
        name="transformers",
        description="a model in Hugging Face transformers inside the daemon, one step at a time "
        "(development and small hosts)",
        factory=_transformers,
        options={
            "model": "hub id or folder (default Hcompany/Holotron-12B)",
            "dialect": f"built-in dialect name (default {DEFAULT_DIALECT})",
            "dialect_file": "JSON/TOML dialect file overriding a built-in",
            "device": "auto (default: a CUDA GPU if torch sees one, else cpu), cpu, cuda, cuda:N",
            "dtype": "auto (default: float32 on cpu, the checkpoint's dtype on a GPU), "
            "float32, bfloat16, float16",
            "device_map": "passed to from_pretrained, e.g. auto (needs accelerate)",
            "trust_remote_code": "true/false (default true for Holotron-12B, else false)",
            "max_new_tokens": "cap on generated tokens per step (default: the dialect's)",
            "attn_implementation": "passed to from_pretrained, e.g. sdpa, flash_attention_2",
            "revision": "hub revision (branch, tag or commit)",
        },
    )
)
