"""TrainerService against a real daemon: who may change weights, and the request
checks that come before any engine is asked. The engine-level refusals (missing,
half-written or foreign checkpoints, a second update, an update that changed
nothing) run on real engines in tests/engines/test_trainer_rpc.py."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import grpc
import pytest

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.base import Decision
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.principals import Role
from holodesk.daemon.rpc.credentials import new_token
from holodesk.daemon.steps import StepContext
from holodesk.proto.v1 import agent_pb2, trainer_pb2, trainer_pb2_grpc
from tests.daemon.support import (
    GUARD_S,
    Daemon,
    bearer,
    holo,
    make_frame,
    rich_status,
    running_daemon,
    scripted_policy,
    write_tokens,
)

CLICK = holo({"action": "click", "x": 500, "y": 500})


def _trainer(daemon: Daemon) -> trainer_pb2_grpc.TrainerServiceStub:
    return trainer_pb2_grpc.TrainerServiceStub(daemon.channel)


async def _code(call: object) -> grpc.StatusCode:
    try:
        await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as error:
        return error.code()
    return grpc.StatusCode.OK


def test_only_trainer_and_admin_roles_reach_the_trainer_service() -> None:
    assert Role.TRAINER.allows(Role.TRAINER)
    assert Role.ADMIN.allows(Role.TRAINER)
    assert Role.TRAINER.allows(Role.AGENT)  # a trainer runs its rollouts' sessions
    assert not Role.AGENT.allows(Role.TRAINER)
    assert not Role.OPERATOR.allows(Role.TRAINER)
    assert not Role.TRAINER.allows(Role.OPERATOR)
    assert not Role.TRAINER.allows(Role.ADMIN)


@pytest.mark.parametrize(
    ("caller", "expected"),
    [
        ("none", grpc.StatusCode.UNAUTHENTICATED),
        ("wrong", grpc.StatusCode.UNAUTHENTICATED),
        ("agent", grpc.StatusCode.PERMISSION_DENIED),
        ("operator", grpc.StatusCode.PERMISSION_DENIED),
        # Past auth: a scripted policy has no weights to change.
        ("trainer", grpc.StatusCode.FAILED_PRECONDITION),
        ("admin", grpc.StatusCode.FAILED_PRECONDITION),
    ],
)
async def test_each_caller_gets_the_status_its_role_deserves(
    tmp_path: Path, caller: str, expected: grpc.StatusCode
) -> None:
    tokens = write_tokens(tmp_path, bot="agent", ops="operator", rl="trainer", root="admin")
    metadata = {
        "none": None,
        "wrong": bearer(new_token()),
        "agent": tokens.metadata("bot"),
        "operator": tokens.metadata("ops"),
        "trainer": tokens.metadata("rl"),
        "admin": tokens.metadata("root"),
    }[caller]
    checkpoint = tmp_path / "step-1"
    checkpoint.mkdir()
    async with running_daemon([scripted_policy([CLICK])], tokens_file=str(tokens.path)) as daemon:
        update = _trainer(daemon).UpdateWeights(
            trainer_pb2.UpdateWeightsRequest(checkpoint_dir=str(checkpoint)), metadata=metadata
        )
        assert await _code(update) == expected
        version = _trainer(daemon).GetPolicyVersion(
            trainer_pb2.GetPolicyVersionRequest(), metadata=metadata
        )
        read_expected = expected if expected != grpc.StatusCode.FAILED_PRECONDITION else None
        assert await _code(version) == (read_expected or grpc.StatusCode.OK)


async def test_a_policy_without_weights_says_so_and_is_not_updatable(tmp_path: Path) -> None:
    async with running_daemon([scripted_policy([CLICK])]) as daemon:
        version = await _trainer(daemon).GetPolicyVersion(trainer_pb2.GetPolicyVersionRequest())
        assert not version.updatable
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await _trainer(daemon).UpdateWeights(
                trainer_pb2.UpdateWeightsRequest(checkpoint_dir=str(tmp_path))
            )
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "no model weights" in (caught.value.details() or "") or "cannot change" in (
            caught.value.details() or ""
        )
        status = rich_status(caught.value)
        assert status.details, "a precondition failure names its violation"


@pytest.mark.parametrize(
    ("request_fields", "code", "words"),
    [
        ({"checkpoint_dir": ""}, grpc.StatusCode.INVALID_ARGUMENT, "checkpoint_dir: required"),
        ({"checkpoint_dir": "ckpt/step-1"}, grpc.StatusCode.INVALID_ARGUMENT, "absolute path"),
        ({"checkpoint_dir": "/x", "mode": 99}, grpc.StatusCode.INVALID_ARGUMENT, "mode"),
        (
            {"checkpoint_dir": "/x", "policy": "nope"},
            grpc.StatusCode.NOT_FOUND,
            "policy nope not found",
        ),
        ({"checkpoint_dir": "/" + "x" * 5000}, grpc.StatusCode.INVALID_ARGUMENT, "checkpoint_dir"),
    ],
)
async def test_a_malformed_request_is_refused_naming_its_field(
    request_fields: dict[str, object], code: grpc.StatusCode, words: str
) -> None:
    async with running_daemon([scripted_policy([CLICK])]) as daemon:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await _trainer(daemon).UpdateWeights(
                trainer_pb2.UpdateWeightsRequest(**request_fields)  # type: ignore[arg-type]
            )
        assert caught.value.code() == code
        assert words in (caught.value.details() or "")


async def test_an_update_during_shutdown_is_unavailable(tmp_path: Path) -> None:
    async with running_daemon([scripted_policy([CLICK])]) as daemon:
        daemon.running.registry.shutting_down.set()
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await asyncio.wait_for(
                _trainer(daemon).UpdateWeights(
                    trainer_pb2.UpdateWeightsRequest(checkpoint_dir=str(tmp_path))
                ),
                GUARD_S,
            )
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "shutting down" in (caught.value.details() or "")


class _WaitsOnAnUpdate(ModelPolicy):
    """A scripted policy whose step takes as long as a weight update the test holds
    (what an engine's step does in modes WAIT and ABORT)."""

    def __init__(self, registry_ready: asyncio.Event, update_done: asyncio.Event) -> None:
        super().__init__(get_dialect(), ScriptedEngine([CLICK]), name="waits")
        self.thinking = registry_ready
        self.update_done = update_done

    async def decide(self, context: StepContext) -> Decision:
        self.thinking.set()
        await self.update_done.wait()
        return await super().decide(context)


@pytest.mark.parametrize("updating", [True, False])
async def test_a_step_waiting_on_a_weight_update_is_not_timed_out(updating: bool) -> None:
    """--step-timeout-s does not count the time a weight update took: a trainer's
    push never ends a session. Without an update the same wait ends the step."""
    thinking, update_done = asyncio.Event(), asyncio.Event()
    policy = _WaitsOnAnUpdate(thinking, update_done)
    async with running_daemon([policy], step_timeout_s=0.3) as daemon:
        stream = daemon.stream()
        await stream.start()
        reply = asyncio.ensure_future(stream.observe(make_frame("f1")))
        await asyncio.wait_for(thinking.wait(), GUARD_S)
        pauses = daemon.running.registry.update_pauses
        with pauses.pausing() if updating else contextlib.nullcontext():
            await asyncio.sleep(0.8)
            update_done.set()
        step = await asyncio.wait_for(reply, GUARD_S)
        if updating:
            assert step.WhichOneof("event") == "actions", step
        else:
            assert step.ended.outcome == agent_pb2.SESSION_OUTCOME_FAILED
            assert "step timeout" in step.ended.reason
