"""How a RunSession stream opens: from its first message to the session it runs.

The first message must be a SessionStart. Without a resume token it creates a new
session in the registry (within its limits: sessions, per principal, frame memory)
for the policy it names, its steps capped at --max-steps; with one it re-attaches
the detached session that token names (same principal, same task if one is given;
NOT_FOUND when unknown or expired). Apart from the step loop because none of it
runs again once the stream has its session.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from holodesk.daemon import convert
from holodesk.daemon.errors import FailedPrecondition, InvalidArgument, Unavailable
from holodesk.daemon.frames import FrameSpec
from holodesk.daemon.policies.base import Policy
from holodesk.daemon.policies.catalog import PolicyCatalog
from holodesk.daemon.policies.computer import ComputerPolicy
from holodesk.daemon.principals import Principal
from holodesk.daemon.session.registry import SessionRegistry
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.session.settings import SessionSettings
from holodesk.proto.v1 import agent_pb2


@dataclass(frozen=True)
class Opened:
    """The session a stream runs, its policy, and whether it was resumed."""

    session: Session
    policy: Policy
    resumed: bool


def check_start(first: agent_pb2.RunSessionRequest) -> agent_pb2.SessionStart:
    """The SessionStart the stream opens with, or the protocol error it made."""
    kind = first.WhichOneof("event")
    if kind is None:
        raise InvalidArgument("event", "empty message: set start, observation or cancel")
    if kind != "start":
        raise FailedPrecondition(
            "start", f"the first message must be start, got {kind}", kind="PROTOCOL"
        )
    if not first.start.resume_token and not first.start.task.strip():
        raise InvalidArgument("start.task", "the task is empty")
    return first.start


def open_session(
    start: agent_pb2.SessionStart,
    registry: SessionRegistry,
    catalog: PolicyCatalog,
    settings: SessionSettings,
    principal: Principal,
) -> Opened:
    """A new session for `start`, or the detached one its resume token names."""
    request = convert.session_request_from_pb(start)
    if registry.shutting_down.is_set():
        raise Unavailable("the daemon is shutting down", retry_after_s=5.0)
    if request.resume_token:
        return _reattach(request.resume_token, request.task, registry, catalog, principal)
    policy = catalog.get(request.policy)
    limit = settings.max_steps
    max_steps = min(request.max_steps, limit) if request.max_steps else limit
    session = registry.create(
        request,
        policy_name=policy.name,
        max_steps=max_steps,
        history_frames=policy.history_frames,
        principal=principal.name,
        # An attached desktop: its steps are its callers' from the first one on.
        relayed=isinstance(policy, ComputerPolicy),
    )
    return Opened(session, policy, resumed=False)


def _reattach(
    token: str,
    task: str,
    registry: SessionRegistry,
    catalog: PolicyCatalog,
    principal: Principal,
) -> Opened:
    found = registry.by_resume_token(token)  # NotFound: unknown or expired
    if task.strip() and task != found.task:
        raise InvalidArgument(
            "start.task", "differs from the task of the session this token resumes"
        )
    policy = catalog.get(found.policy_name)
    session = registry.reattach(token, principal.name)
    return Opened(session, policy, resumed=True)


def frame_spec_for(session: Session, policy: Policy, settings: SessionSettings) -> FrameSpec:
    """What this stream's frames are asked to look like (SessionStarted.frame_spec):
    the policy's box and encoding, the daemon's byte limit and delta offer."""
    return replace(
        policy.frame_spec(session.request.encodings, session.request.primary_screen()),
        max_bytes=settings.frame_limits.max_bytes,
        accept_deltas=settings.accept_deltas,
    )
