"""AgentService: RunSession (one agent run per stream) and Locate (one-shot grounding)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from holodesk.daemon import convert
from holodesk.daemon.auth import current_principal
from holodesk.daemon.errors import DeadlineExceeded, InvalidArgument, Unimplemented
from holodesk.daemon.frames import validate_frame
from holodesk.daemon.interceptor import aclose
from holodesk.daemon.policies.catalog import PolicyCatalog
from holodesk.daemon.session_runner import SessionRunner, SessionSettings
from holodesk.daemon.sessions import SessionRegistry
from holodesk.proto.v1 import agent_pb2, agent_pb2_grpc

MAX_DESCRIPTIONS = 64


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
        if not request.HasField("frame"):
            raise InvalidArgument("frame", "required")
        descriptions = tuple(request.descriptions)
        if not descriptions:
            raise InvalidArgument("descriptions", "give at least one description")
        if len(descriptions) > MAX_DESCRIPTIONS:
            raise InvalidArgument("descriptions", f"at most {MAX_DESCRIPTIONS} per request")
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
        return agent_pb2.LocateResponse(locations=[convert.location_to_pb(x) for x in locations])

    async def ReportReward(  # noqa: N802
        self, request: agent_pb2.ReportRewardRequest, context: Any
    ) -> agent_pb2.ReportRewardResponse:
        # Recordings land with issue 7's recorder, which replaces this.
        raise Unimplemented("rewards are recorded once session recording is enabled")
