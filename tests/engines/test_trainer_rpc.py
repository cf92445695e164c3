"""TrainerService through a real daemon whose policy runs the transformers engine on
the tiny Holotron-architecture model: each bad update gets its precise status and
the old weights keep serving (same version, same checksum); a good one changes the
version every later step carries. The engine's own guarantees (modes, fingerprint,
LoRA) are tested in test_transformers_weights.py and test_vllm_weights.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import grpc
import pytest
import pytest_asyncio

from holodesk.daemon.engines.transformers_engine import TransformersEngine
from holodesk.daemon.engines.transformers_options import TransformersSettings
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.proto.v1 import agent_pb2, trainer_pb2, trainer_pb2_grpc
from tests.daemon.support import Daemon, make_frame, rich_status, running_daemon
from tests.engines.support import tiny_dialect
from tests.support.checkpoints import half_written, other_architecture, perturbed
from tests.support.tiny_models import TinyModel, tiny_nemotron_vl_for_transformers

pytest.importorskip("transformers", reason="needs holodesk-daemon[transformers]")

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def tiny_path(tiny_model: TinyModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_nemotron_vl_for_transformers(tiny_model, tmp_path_factory.mktemp("tiny-tf"))


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def daemon(
    tiny_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Daemon]:
    settings = TransformersSettings(model=str(tiny_path), device="cpu", trust_remote_code=True)
    dialect = tiny_dialect(tmp_path_factory.mktemp("dialect"), max_tokens=8)
    policy = ModelPolicy(dialect, TransformersEngine(settings), name="tiny", parse_retries=0)
    async with running_daemon([policy]) as running:
        yield running


def _trainer(daemon: Daemon) -> trainer_pb2_grpc.TrainerServiceStub:
    return trainer_pb2_grpc.TrainerServiceStub(daemon.channel)


async def _version(daemon: Daemon) -> trainer_pb2.PolicyVersion:
    reply: trainer_pb2.GetPolicyVersionResponse = await _trainer(daemon).GetPolicyVersion(
        trainer_pb2.GetPolicyVersionRequest()
    )
    assert reply.updatable
    return reply.version


async def _step_version(daemon: Daemon, task: str) -> agent_pb2.Generation:
    """One session step's generation (the random model's answer ends the session)."""
    stream = daemon.stream()
    await stream.start(task, sampling=agent_pb2.SamplingParams(prompt_token_ids=True))
    reply = await stream.observe(make_frame(task, 96, 64))
    generation = (
        reply.actions.generation
        if reply.WhichOneof("event") == "actions"
        else reply.ended.generation
    )
    stream.call.cancel()
    return generation


def _update(folder: Path, **fields: object) -> trainer_pb2.UpdateWeightsRequest:
    return trainer_pb2.UpdateWeightsRequest(checkpoint_dir=str(folder), **fields)  # type: ignore[arg-type]


BAD: dict[str, tuple[Callable[[Path, Path], Path], grpc.StatusCode, str]] = {
    "missing": (lambda tiny, folder: folder / "nowhere", grpc.StatusCode.NOT_FOUND, "not exist"),
    "half-written": (half_written, grpc.StatusCode.INVALID_ARGUMENT, "half-written"),
    "other-shape": (
        lambda tiny, folder: perturbed(tiny, folder, language_model__lm_head__weight=(8, 64)),
        grpc.StatusCode.INVALID_ARGUMENT,
        "another shape",
    ),
    "other-architecture": (
        other_architecture,
        grpc.StatusCode.INVALID_ARGUMENT,
        "another architecture",
    ),
    # The serving weights again: the engine's fingerprint does not change.
    "same-weights": (
        lambda tiny, folder: tiny,
        grpc.StatusCode.FAILED_PRECONDITION,
        "did not change",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
async def test_a_bad_update_gets_its_status_and_the_old_weights_serve(
    daemon: Daemon, tiny_path: Path, tmp_path: Path, case: str
) -> None:
    make, code, words = BAD[case]
    before = await _version(daemon)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _trainer(daemon).UpdateWeights(_update(make(tiny_path, tmp_path / case)))
    assert caught.value.code() == code, caught.value.details()
    assert words in (caught.value.details() or ""), caught.value.details()
    assert rich_status(caught.value).details
    assert await _version(daemon) == before


async def test_a_version_that_does_not_increase_is_refused(
    daemon: Daemon, tiny_path: Path, tmp_path: Path
) -> None:
    """A trainer may number versions itself (its training step), never backwards."""
    current = (await _version(daemon)).number
    jumped = await _trainer(daemon).UpdateWeights(
        _update(perturbed(tiny_path, tmp_path / "jump", seed=31), version=current + 10)
    )
    assert jumped.version.number == current + 10
    for number in (current + 10, current + 5):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await _trainer(daemon).UpdateWeights(
                _update(perturbed(tiny_path, tmp_path / f"low-{number}", seed=32), version=number)
            )
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "not above the serving version" in (caught.value.details() or "")
        assert await _version(daemon) == jumped.version


async def test_two_updates_at_once_one_is_aborted(
    daemon: Daemon, tiny_path: Path, tmp_path: Path
) -> None:
    first = perturbed(tiny_path, tmp_path / "a", seed=11)
    second = perturbed(tiny_path, tmp_path / "b", seed=12)
    before = await _version(daemon)
    results = await asyncio.gather(
        _trainer(daemon).UpdateWeights(_update(first, label="a")),
        _trainer(daemon).UpdateWeights(_update(second, label="b")),
        return_exceptions=True,
    )
    refused = [r for r in results if isinstance(r, grpc.aio.AioRpcError)]
    done = [r for r in results if isinstance(r, trainer_pb2.UpdateWeightsResponse)]
    assert len(refused) == 1, results
    assert len(done) == 1, results
    assert refused[0].code() == grpc.StatusCode.ABORTED
    assert "another weight update is running" in (refused[0].details() or "")
    assert done[0].version.number == before.number + 1
    assert (await _version(daemon)).number == before.number + 1


async def test_an_update_changes_the_version_every_later_step_carries(
    daemon: Daemon, tiny_path: Path, tmp_path: Path
) -> None:
    before_step = await _step_version(daemon, "before")
    before = await _version(daemon)
    assert before_step.policy_version == before.number
    assert before.weights_checksum.startswith("sha256:")

    reply = await _trainer(daemon).UpdateWeights(
        _update(
            perturbed(tiny_path, tmp_path / "next", seed=21),
            mode=trainer_pb2.UPDATE_MODE_WAIT,
            label="step-21",
        )
    )
    assert reply.previous == before
    assert reply.version.number == before.number + 1
    assert reply.version.label == "step-21"
    assert reply.version.weights_checksum != before.weights_checksum
    assert reply.mode == trainer_pb2.UPDATE_MODE_WAIT
    assert 0 <= reply.paused_seconds <= reply.seconds

    after = await _step_version(daemon, "after")
    assert after.policy_version == reply.version.number
    assert after.policy_label == "step-21"
    assert after.prompt_token_ids, "the session asked for its prompt's token ids"
    for completion in after.completions:
        assert [s.version for s in completion.versions] == [reply.version.number]
