"""A trainer updates a real `vllm serve` itself (docs/online-rl.md, "A remote vLLM"),
and the openai engine stamps each step with the version the server then reports.

The package's server runs with VLLM_SERVER_DEV_MODE=1 (conftest.py), so it serves
vLLM's RL routes. The recipe runs here as the docs give it, on CPU: pause (keep) with
a request in flight, reload the weights from a folder through /collective_rpc, name
the version, reset the prefix cache (running requests too), resume. The weights
change (vLLM's own /weight_checker says so), the request in flight says it straddled
the update, the next step carries the new version.
The module puts the server's first weights and version back when it ends, so the
modules after it see the server as it was.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from safetensors.numpy import load_file, save_file

from holodesk.daemon.engines.openai_engine import OpenAIEngine
from holodesk.daemon.engines.remote_version import VersionSource
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.proto.v1 import agent_pb2
from holodesk.values.generation import VersionSpan
from tests.daemon.support import GUARD_S, running_daemon
from tests.engines.support import eventually, gibberish_session, needs_vllm, request, tiny_dialect
from tests.engines.vllm_serve.shared_server import SERVED_NAME
from tests.support.vllm_server import VllmServer

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(420),  # the package's first test also waits for its server
    needs_vllm,
]

# Every token after the update: the answer's length says none was lost to the pause.
IN_FLIGHT_TOKENS = 200


class Trainer:
    """What a trainer sends a `vllm serve` in dev mode: its RL and dev routes."""

    def __init__(self, client: httpx.AsyncClient, root: str) -> None:
        self.client = client
        self.root = root

    async def call(self, path: str, body: dict[str, Any] | None = None, **params: str) -> Any:
        response = await self.client.post(f"{self.root}{path}", json=body, params=params)
        assert response.status_code == 200, f"POST {path}: {response.text}"
        return response.json() if response.content else None

    async def version(self) -> str:
        response = await self.client.get(f"{self.root}/weight_info")
        response.raise_for_status()
        return str(response.json()["weight_version"])

    async def checksums(self) -> dict[str, str]:
        answer = await self.call("/weight_checker", {"action": "checksum"})
        return dict(answer["checksums"])

    async def reload(self, folder: Path, version: str) -> None:
        """The recipe's update: pause (keep), load from a folder, name it, drop the
        old weights' KV, resume."""
        await self.pause()
        try:
            await self.load(folder, version)
        finally:
            await self.resume()

    async def pause(self) -> None:
        """Requests in flight are frozen, new ones queued, until resume()."""
        await self.call("/pause", mode="keep")

    async def load(self, folder: Path, version: str) -> None:
        await self.call(
            "/collective_rpc",
            {"method": "reload_weights", "kwargs": {"weights_path": str(folder)}},
        )
        await self.call("/update_weight_version", {"new_version": version})
        # No request, frozen or new, may reuse KV the old weights computed.
        reset = await self.call("/reset_prefix_cache", reset_running_requests="true")
        assert reset == {"success": True}

    async def resume(self) -> None:
        await self.call("/resume")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def trainer(server: VllmServer) -> AsyncIterator[Trainer]:
    """The trainer's client; at the module's end the server's first weights and
    version serve again."""
    first = model_folder(server)
    async with httpx.AsyncClient(timeout=120.0, trust_env=False) as client:
        trainer = Trainer(client, server.root_url)
        version = await trainer.version()
        yield trainer
        await trainer.reload(first, version)


def model_folder(server: VllmServer) -> Path:
    args = [str(a) for a in server.process.args]  # type: ignore[union-attr]
    return Path(args[args.index("--model") + 1])


def other_weights(first: Path, folder: Path) -> Path:
    """The served checkpoint with every weight changed a little: same names and
    shapes, so it loads in place, and other checksums."""
    shutil.copytree(first, folder)
    weights = load_file(first / "model.safetensors")
    save_file({name: t * 1.01 for name, t in weights.items()}, str(folder / "model.safetensors"))
    return folder


async def test_auto_finds_vllms_weight_info(engine: OpenAIEngine) -> None:
    assert engine.versions.source is VersionSource.WEIGHT_INFO


async def test_the_next_step_carries_the_version_the_trainer_named(
    server: VllmServer, trainer: Trainer, tmp_path: Path
) -> None:
    await trainer.call("/update_weight_version", {"new_version": "7"})
    ended = await _step(server, tmp_path)
    assert ended.generation.policy_version == 7
    assert ended.generation.policy_label == "7"
    (completion,) = ended.generation.completions
    assert [span.version for span in completion.versions] == [7]


async def test_a_folder_reload_under_a_request_in_flight_is_stamped_on_both_sides(
    server: VllmServer, trainer: Trainer, tmp_path: Path
) -> None:
    await trainer.call("/update_weight_version", {"new_version": "7"})
    folder = other_weights(model_folder(server), tmp_path / "step-8")
    checksums = await trainer.checksums()
    # Its own engine: the random model must not stop early by itself.
    engine = OpenAIEngine(
        server.base_url,
        SERVED_NAME,
        timeout_s=120.0,
        max_retries=0,
        extra_body={"ignore_eos": True},
    )
    await engine.start()
    # The request reaches vLLM while the trainer holds it paused, so it is in flight
    # across the reload whatever the machine's speed (sent after the pause, it cannot
    # finish before it, as a request caught mid-decode could on a fast machine).
    await trainer.pause()
    try:
        running = asyncio.create_task(
            engine.generate(request("straddle", max_tokens=IN_FLIGHT_TOKENS))
        )
        added = r"Added request \S*straddle#0"
        await eventually(
            lambda: re.search(added, server.log_text()) is not None,
            "the request added to vLLM",
            off_loop=True,
            interval_s=0.05,
        )
        await trainer.load(folder, "8")
        assert not running.done(), "a request answered while vLLM was paused"
    finally:
        await trainer.resume()
    try:
        result = await asyncio.wait_for(running, GUARD_S * 4)
    finally:
        await engine.close()
    assert not running.cancelled()
    (sample,) = result.all_samples
    assert sample.completion_tokens == IN_FLIGHT_TOKENS, "it stopped short"
    # The chat API does not say at which token the weights changed: both versions,
    # each over every token; the newest, 8, is the label.
    assert sample.versions == (
        VersionSpan(7, 0, IN_FLIGHT_TOKENS),
        VersionSpan(8, 0, IN_FLIGHT_TOKENS),
    )
    assert result.policy_label == "8"
    # The reload did change the weights (vLLM's own checksums of its tensors).
    assert await trainer.checksums() != checksums
    ended = await _step(server, tmp_path)
    assert ended.generation.policy_version == 8
    assert [span.version for span in ended.generation.completions[0].versions] == [8]


async def _step(server: VllmServer, tmp_path: Path) -> agent_pb2.SessionEnded:
    """One daemon step on the server (gibberish: it fails, its Generation is kept)."""
    engine = OpenAIEngine(server.base_url, SERVED_NAME, timeout_s=60.0)
    policy = ModelPolicy(tiny_dialect(tmp_path), engine, name="tiny", parse_retries=0)
    async with running_daemon([policy]) as daemon:
        return await gibberish_session(daemon, 0)
