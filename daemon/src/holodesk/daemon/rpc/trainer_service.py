"""TrainerService: an RL trainer changes a policy's weights while its sessions run.

The service finds the policy, checks the request, and hands the update to the
policy's engine (engines/weights.py says what every engine guarantees: checks
before a byte is loaded, no request lost in any mode, an update proven by the
engine's own fingerprint). Here: who may (the `trainer` or `admin` role, in
auth.py), one update at a time per policy (a second gets ABORTED without reaching
the engine), none while the daemon shuts down (UNAVAILABLE), and each engine
error as its precise status. Sessions are never touched: a step in flight
finishes, waits or runs again inside the engine, and its generation says which
version made it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from holodesk.daemon import convert
from holodesk.daemon.engines.weights import (
    CheckpointInvalidError,
    CheckpointNotFoundError,
    EngineClosingError,
    UpdatableEngine,
    UpdateBusyError,
    UpdateIneffectiveError,
    UpdateUnsupportedError,
    WeightUpdate,
    WeightUpdateError,
)
from holodesk.daemon.errors import (
    Aborted,
    FailedPrecondition,
    HolodeskError,
    InvalidArgument,
    NotFound,
    Unavailable,
)
from holodesk.daemon.policies.catalog import PolicyCatalog
from holodesk.daemon.session.registry import SessionRegistry
from holodesk.proto.v1 import trainer_pb2, trainer_pb2_grpc

log = logging.getLogger(__name__)


class TrainerService(trainer_pb2_grpc.TrainerServiceServicer):
    def __init__(self, registry: SessionRegistry, catalog: PolicyCatalog) -> None:
        self._registry = registry
        self._catalog = catalog
        self._locks: dict[str, asyncio.Lock] = {}

    async def UpdateWeights(  # noqa: N802
        self, request: trainer_pb2.UpdateWeightsRequest, context: Any
    ) -> trainer_pb2.UpdateWeightsResponse:
        convert.check_limits(request)
        folder = convert.folder_from_pb(request.checkpoint_dir, "checkpoint_dir")
        mode = convert.update_mode_from_pb(request.mode, "mode")
        update = await self._update(
            request.policy,
            f"weights from {folder}",
            lambda engine: engine.update_weights(
                folder, mode, version=request.version, label=request.label
            ),
        )
        return convert.weight_update_to_pb(update)

    async def LoadAdapter(  # noqa: N802
        self, request: trainer_pb2.LoadAdapterRequest, context: Any
    ) -> trainer_pb2.LoadAdapterResponse:
        convert.check_limits(request)
        folder = convert.folder_from_pb(request.adapter_dir, "adapter_dir")
        mode = convert.update_mode_from_pb(request.mode, "mode")
        name = request.name or folder.name
        update = await self._update(
            request.policy,
            f"adapter {name} from {folder}",
            lambda engine: engine.load_adapter(
                folder, name, mode, version=request.version, label=request.label
            ),
        )
        return trainer_pb2.LoadAdapterResponse(update=convert.weight_update_to_pb(update))

    async def UnloadAdapter(  # noqa: N802
        self, request: trainer_pb2.UnloadAdapterRequest, context: Any
    ) -> trainer_pb2.UnloadAdapterResponse:
        convert.check_limits(request)
        mode = convert.update_mode_from_pb(request.mode, "mode")
        update = await self._update(
            request.policy,
            "the base weights (adapter unloaded)",
            lambda engine: engine.unload_adapter(
                mode, version=request.version, label=request.label
            ),
        )
        return trainer_pb2.UnloadAdapterResponse(update=convert.weight_update_to_pb(update))

    async def GetPolicyVersion(  # noqa: N802
        self, request: trainer_pb2.GetPolicyVersionRequest, context: Any
    ) -> trainer_pb2.GetPolicyVersionResponse:
        convert.check_limits(request)
        policy = self._catalog.get(request.policy)
        engine = getattr(policy, "engine", None)
        if not isinstance(engine, UpdatableEngine):
            return trainer_pb2.GetPolicyVersionResponse(updatable=False)
        return trainer_pb2.GetPolicyVersionResponse(
            version=convert.policy_version_to_pb(engine.policy_version),
            updatable=True,
            updating=engine.updating,
        )

    async def _update(
        self,
        policy_name: str,
        what: str,
        run: Callable[[UpdatableEngine], Awaitable[WeightUpdate]],
    ) -> WeightUpdate:
        if self._registry.shutting_down.is_set():
            raise Unavailable("the daemon is shutting down: no weight update now", 5.0)
        policy = self._catalog.get(policy_name)
        engine = self._updatable(policy.name, getattr(policy, "engine", None))
        lock = self._locks.setdefault(policy.name, asyncio.Lock())
        if lock.locked():
            raise Aborted(
                f"policy {policy.name}: another weight update is running; "
                "send this one after it returns"
            )
        started = time.monotonic()
        async with lock:
            log.info("policy %s: loading %s", policy.name, what)
            try:
                # Steps waiting on it are not timed meanwhile (step timeouts).
                with self._registry.update_pauses.pausing():
                    update = await run(engine)
            except WeightUpdateError as error:
                log.warning("policy %s: update refused: %s", policy.name, error)
                raise _status(policy.name, error) from error
        log.info(
            "policy %s: version %d (%s) serves, checksum %s; paused %.3f s, %d in flight, "
            "%d retried, %.2f s in all",
            policy.name,
            update.version.number,
            update.version.label or "no label",
            update.version.checksum or "unknown",
            update.paused_seconds,
            update.requests_in_flight,
            update.requests_retried,
            time.monotonic() - started,
        )
        return update

    @staticmethod
    def _updatable(policy: str, engine: object) -> UpdatableEngine:
        if isinstance(engine, UpdatableEngine):
            return engine
        kind = getattr(engine, "name", None)
        why = (
            f"its engine ({kind}) runs elsewhere: update that server yourself "
            "(docs/online-rl.md, 'A remote vLLM')"
            if kind == "openai"
            else "it has no model weights to change"
            if engine is None
            else f"its engine ({kind}) cannot change weights"
        )
        raise FailedPrecondition(f"policy {policy}", why, kind="NOT_UPDATABLE")


def _status(policy: str, error: WeightUpdateError) -> HolodeskError:
    message = str(error)
    if isinstance(error, CheckpointNotFoundError):
        return NotFound("checkpoint", "", message)
    if isinstance(error, CheckpointInvalidError):
        return InvalidArgument("checkpoint", message)
    if isinstance(error, UpdateBusyError):
        return Aborted(f"policy {policy}: {message}")
    if isinstance(error, EngineClosingError):
        return Unavailable(f"policy {policy}: {message}", 5.0)
    if isinstance(error, UpdateIneffectiveError):
        return FailedPrecondition(f"policy {policy}", message, kind="UPDATE_INEFFECTIVE")
    if isinstance(error, UpdateUnsupportedError):
        return FailedPrecondition(f"policy {policy}", message, kind="NOT_UPDATABLE")
    return FailedPrecondition(f"policy {policy}", message, kind="UPDATE_FAILED")
