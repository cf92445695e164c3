"""ControlService: list, pause, resume and cancel sessions; describe the server."""

from __future__ import annotations

from datetime import UTC, datetime
from importlib import metadata
from typing import Any

from google.protobuf.message import Message

from holodesk.daemon import convert
from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.policies.base import Pinned, Policy
from holodesk.daemon.policies.catalog import PolicyCatalog
from holodesk.daemon.session.registry import SessionRegistry
from holodesk.proto.limits import REASON_CHARS, clip
from holodesk.proto.v1 import control_pb2, control_pb2_grpc


def daemon_version() -> str:
    try:
        return metadata.version("holodesk-daemon")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _require_id(request: Message) -> str:
    """The request's session_id, held to the contract's limits first."""
    convert.check_limits(request)
    session_id: str = getattr(request, "session_id")  # noqa: B009 - every caller's has one
    if not session_id:
        raise InvalidArgument("session_id", "required")
    return session_id


class ControlService(control_pb2_grpc.ControlServiceServicer):
    def __init__(
        self,
        registry: SessionRegistry,
        catalog: PolicyCatalog,
        *,
        max_message_bytes: int,
        started_at: datetime,
    ) -> None:
        self._registry = registry
        self._catalog = catalog
        self._max_message_bytes = max_message_bytes
        self._started_at = started_at

    async def ListSessions(  # noqa: N802
        self, request: control_pb2.ListSessionsRequest, context: Any
    ) -> control_pb2.ListSessionsResponse:
        return control_pb2.ListSessionsResponse(
            sessions=[convert.session_info_to_pb(s) for s in self._registry.list()]
        )

    async def PauseSession(  # noqa: N802
        self, request: control_pb2.PauseSessionRequest, context: Any
    ) -> control_pb2.PauseSessionResponse:
        session = self._registry.pause(_require_id(request))
        return control_pb2.PauseSessionResponse(session=convert.session_info_to_pb(session))

    async def ResumeSession(  # noqa: N802
        self, request: control_pb2.ResumeSessionRequest, context: Any
    ) -> control_pb2.ResumeSessionResponse:
        session = self._registry.resume(_require_id(request), request.note)
        return control_pb2.ResumeSessionResponse(session=convert.session_info_to_pb(session))

    async def CancelSession(  # noqa: N802
        self, request: control_pb2.CancelSessionRequest, context: Any
    ) -> control_pb2.CancelSessionResponse:
        # Never refused for its reason's length (a stop must stop): cut instead.
        request.reason = clip(request.reason, REASON_CHARS)
        session_id = _require_id(request)
        reason = request.reason or "cancelled by an operator"
        session = self._registry.cancel(session_id, reason)
        return control_pb2.CancelSessionResponse(session=convert.session_info_to_pb(session))

    async def GetServerInfo(  # noqa: N802
        self, request: control_pb2.GetServerInfoRequest, context: Any
    ) -> control_pb2.GetServerInfoResponse:
        return control_pb2.GetServerInfoResponse(
            version=daemon_version(),
            default_policy=self._catalog.default,
            policies=[_policy_info(p) for p in self._catalog.policies],
            active_sessions=len(self._registry),
            max_message_bytes=self._max_message_bytes,
            started_at=convert.timestamp_to_pb(self._started_at),
            now=convert.timestamp_to_pb(datetime.now(UTC)),
        )


def _policy_info(policy: Policy) -> control_pb2.PolicyInfo:
    info = control_pb2.PolicyInfo(
        name=policy.name, description=policy.description, ready=policy.ready
    )
    if isinstance(policy, Pinned):
        info.pinning.CopyFrom(convert.pinning_to_pb(policy.pinning()))
    return info
