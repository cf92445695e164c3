"""AgentService: RunSession (one agent run per stream), Locate (one-shot grounding) and
ReportReward (a session's reward, written to its recording: recorder.py)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from typing import Any

from holodesk.daemon import convert
from holodesk.daemon.errors import (
    DeadlineExceeded,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unavailable,
)
from holodesk.daemon.frames import validate_frame
from holodesk.daemon.policies.base import Pinned
from holodesk.daemon.policies.catalog import PolicyCatalog
from holodesk.daemon.principals import Role
from holodesk.daemon.rpc.auth import current_principal
from holodesk.daemon.rpc.interceptor import aclose
from holodesk.daemon.session.registry import SessionRegistry
from holodesk.daemon.session.session_runner import SessionRunner
from holodesk.daemon.session.settings import SessionSettings
from holodesk.proto.v1 import agent_pb2, agent_pb2_grpc


class AgentService(agent_pb2_grpc.AgentServiceServicer):
    def __init__(
        self, registry: SessionRegistry, catalog: PolicyCatalog, settings: SessionSettings
    ) -> None:
        self._registry = registry
        self._catalog = catalog
        self._settings = settings

    async def RunSession(  # noqa: N802
        self, request_iterator: AsyncIterator[agent_pb2.RunSessionRequest], context: Any
    ) -> AsyncIterator[agent_pb2.RunSessionResponse]:
        runner = SessionRunner(
            request_iterator,
            context,
            registry=self._registry,
            catalog=self._catalog,
            settings=self._settings,
            principal=current_principal(),
        )
        responses = runner.run()
        try:
            async for response in responses:
                yield response
        finally:
            await aclose(responses)

    async def Locate(  # noqa: N802
        self, request: agent_pb2.LocateRequest, context: Any
    ) -> agent_pb2.LocateResponse:
        if self._registry.shutting_down.is_set():
            raise Unavailable("the daemon is shutting down", retry_after_s=5.0)
        # Counted from the check above, with no await between: a stop that begins after
        # it waits for this answer.
        with self._registry.call():
            return await self._locate(request)

    async def _locate(self, request: agent_pb2.LocateRequest) -> agent_pb2.LocateResponse:
        # The contract's limits first (descriptions, policy, frame ids), before use.
        convert.check_limits(request)
        if not request.HasField("frame"):
            raise InvalidArgument("frame", "required")
        descriptions = tuple(request.descriptions)
        if not descriptions:
            raise InvalidArgument("descriptions", "give at least one description")
        for index, description in enumerate(descriptions):
            if not description.strip():
                raise InvalidArgument(f"descriptions[{index}]", "is empty")
        frame = convert.frame_from_pb(request.frame, "frame")
        validate_frame(frame, self._settings.frame_limits, "frame")
        policy = self._catalog.get(request.policy)
        # The step timeout bounds a stuck policy; the client's own deadline, when it set
        # one, cancels this call by itself (and with it the policy's work).
        timeout = self._settings.step_timeout_s or None
        try:
            locations = await asyncio.wait_for(policy.locate(frame, descriptions), timeout)
        except TimeoutError:
            raise DeadlineExceeded(
                f"the policy did not locate within {timeout:g} s (step timeout)"
            ) from None
        response = agent_pb2.LocateResponse(
            locations=[convert.location_to_pb(x) for x in locations]
        )
        if isinstance(policy, Pinned):
            response.policy.CopyFrom(convert.pinning_to_pb(policy.pinning()))
        return response

    async def ReportReward(  # noqa: N802
        self, request: agent_pb2.ReportRewardRequest, context: Any
    ) -> agent_pb2.ReportRewardResponse:
        """Reward/success of a live or recently ended session, written to its recording."""
        convert.check_limits(request)  # session_id, note
        session_id = request.session_id
        if not session_id:
            raise InvalidArgument("session_id", "required")
        has_reward = request.HasField("reward")
        if has_reward and not math.isfinite(request.reward):
            raise InvalidArgument("reward", f"must be a finite number, got {request.reward}")
        if not has_reward and not request.HasField("success"):
            raise InvalidArgument("reward", "set reward, success or both")
        recorder = self._settings.recorder
        try:
            owner = self._registry.get(session_id).principal
        except NotFound:
            target = None if recorder is None else recorder.ended_target(session_id)
            if target is None:
                raise NotFound(
                    "session", session_id, "unknown, or ended too long ago to take a reward"
                ) from None
            owner = target.principal
        caller = current_principal()
        if caller.name != owner and caller.role is not Role.ADMIN:
            raise PermissionDenied(
                "only the principal that ran the session, or an admin, may report its reward",
                principal=caller.name,
            )
        if recorder is None:
            return agent_pb2.ReportRewardResponse(recorded=False)
        recorded = await recorder.add_reward(
            session_id,
            request.reward if has_reward else None,
            request.success if request.HasField("success") else None,
            request.note,
        )
        return agent_pb2.ReportRewardResponse(recorded=recorded)
