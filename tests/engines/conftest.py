"""Fixtures the engine test modules share (each module gets its own instance)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.tiny_models import TinyModel, build_tiny_nemotron_vl


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> TinyModel:
    return build_tiny_nemotron_vl(tmp_path_factory.mktemp("tiny-holotron"))


@pytest.fixture(scope="module")
def vllm_env() -> Iterator[None]:
    """In-process vLLM on CPU, offline."""
    with pytest.MonkeyPatch.context() as patch:
        # The CPU platform swaps "uni" for worker processes unless this is 0.
        patch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("VLLM_NO_USAGE_STATS", "1")
        yield
