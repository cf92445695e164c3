"""holodeskd: the gRPC daemon that runs computer-use agent sessions.

Run it:

    holodeskd --listen 127.0.0.1:50051 --policy scripted --script steps.json

Port 0 picks a free port; the daemon prints ``holodeskd listening on HOST:PORT``
once it accepts connections (tests and the client's demo read that line). It
binds loopback unless told otherwise; it has no TLS or authentication of its
own, so expose it beyond the host only behind something that does.

What it serves (contract: protos/holodesk/v1):

- ``holodesk.v1.AgentService``: RunSession streams (one agent run each) and Locate.
- ``holodesk.v1.ControlService``: list / pause / resume / cancel sessions, server info.
- ``grpc.health.v1.Health``: NOT_SERVING until every policy's start() returned
  (model loaded), for "" and for each service name; NOT_SERVING again on shutdown.
- Server reflection for all of the above (``grpcurl -plaintext HOST:PORT list``).

Errors are precise status codes with google.rpc details (see errors.py):
INVALID_ARGUMENT with BadRequest field violations for malformed messages,
FAILED_PRECONDITION for protocol-order violations, NOT_FOUND for unknown
session ids, resume tokens or policies, UNAVAILABLE with RetryInfo while a
policy starts or the daemon stops, RESOURCE_EXHAUSTED for messages above
--max-message-mb (gRPC's own check), INTERNAL naming the exception otherwise.

On SIGTERM or SIGINT: health goes NOT_SERVING, new RPCs are refused, sessions
waiting for their client end with UNAVAILABLE (they may resume elsewhere),
steps being decided get up to --grace-s to finish and send their actions, then
the policies close and the process exits 0. Under systemd (Type=notify) it
sends READY=1 when serving and STOPPING=1 when it starts draining.

Programmatic use (tests, the client's demo command):

    async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
        channel = grpc.aio.insecure_channel(running.address)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from holodesk.daemon.agent_service import AgentService
from holodesk.daemon.config import ServerConfig, is_loopback, split_listen
from holodesk.daemon.control_service import ControlService
from holodesk.daemon.frames import FrameLimits
from holodesk.daemon.interceptor import ErrorInterceptor
from holodesk.daemon.policies.base import Policy
from holodesk.daemon.policies.catalog import PolicyCatalog
from holodesk.daemon.policies.registry import create_policy
from holodesk.daemon.sdnotify import notify
from holodesk.daemon.session_runner import SessionSettings
from holodesk.daemon.sessions import SessionRegistry
from holodesk.proto.v1 import agent_pb2, agent_pb2_grpc, control_pb2_grpc

log = logging.getLogger(__name__)

AGENT_SERVICE = agent_pb2.DESCRIPTOR.services_by_name["AgentService"].full_name
CONTROL_SERVICE = agent_pb2.DESCRIPTOR.pool.FindServiceByName(
    "holodesk.v1.ControlService"
).full_name
HEALTH_NAMES = ("", AGENT_SERVICE, CONTROL_SERVICE)


@dataclass
class RunningServer:
    server: Any
    host: str
    port: int
    config: ServerConfig
    registry: SessionRegistry
    catalog: PolicyCatalog
    health: Any
    # Resolves when every policy has started (fails if one could not).
    policies_started: asyncio.Task[None]
    _stopped: bool = field(default=False, repr=False)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def stop(self, grace_s: float | None = None) -> None:
        """Drain and stop; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        grace = self.config.grace_s if grace_s is None else grace_s
        log.info("holodeskd stopping (grace %.1fs, %d session(s))", grace, len(self.registry))
        notify("STOPPING=1")
        await self.health.enter_graceful_shutdown()
        self.registry.shutting_down.set()
        self.policies_started.cancel()
        await self.server.stop(grace)
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.policies_started
        await self.catalog.close()
        log.info("holodeskd stopped")


def _grpc_options(config: ServerConfig) -> list[tuple[str, Any]]:
    return [
        ("grpc.max_receive_message_length", config.max_message_bytes),
        ("grpc.max_send_message_length", config.max_message_bytes),
        # Long-lived session streams sit idle while a human acts; keep them alive.
        ("grpc.keepalive_time_ms", 60_000),
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.so_reuseport", 0),
    ]


async def _start_policies(catalog: PolicyCatalog, health_servicer: Any) -> None:
    try:
        await catalog.start()
    except Exception:
        log.exception("a policy failed to start; the daemon stays NOT_SERVING")
        raise
    for name in HEALTH_NAMES:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    log.info("policies ready: %s", ", ".join(p.name for p in catalog.policies))
    notify("READY=1")


@asynccontextmanager
async def serve(
    config: ServerConfig, policies: Sequence[Policy] | None = None
) -> AsyncIterator[RunningServer]:
    """Start holodeskd in this event loop; stop (draining) when the block exits."""
    if policies is None:
        policies = [create_policy(config.policy, config.policy_options)]
    catalog = PolicyCatalog(policies)
    registry = SessionRegistry()
    limits = FrameLimits(max_bytes=config.max_frame_bytes, max_pixels=config.max_frame_pixels)
    settings = SessionSettings(frame_limits=limits, max_steps=config.max_steps)

    server = grpc.aio.server(interceptors=[ErrorInterceptor()], options=_grpc_options(config))
    agent_pb2_grpc.add_AgentServiceServicer_to_server(
        AgentService(registry, catalog, settings), server
    )
    control_pb2_grpc.add_ControlServiceServicer_to_server(
        ControlService(
            registry,
            catalog,
            max_message_bytes=config.max_message_bytes,
            started_at=datetime.now(UTC),
        ),
        server,
    )
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in HEALTH_NAMES:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    reflection.enable_server_reflection(
        (*HEALTH_NAMES[1:], health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )

    host, _ = split_listen(config.listen)
    if not is_loopback(host):
        log.warning(
            "listening on %s: not loopback, and holodeskd has no TLS or authentication", host
        )
    try:
        port = server.add_insecure_port(config.listen)
    except RuntimeError as exc:
        raise OSError(f"cannot listen on {config.listen}: {exc}") from exc
    if port == 0:
        raise OSError(f"cannot listen on {config.listen}")
    await server.start()
    starter = asyncio.create_task(_start_policies(catalog, health_servicer), name="policy-start")
    running = RunningServer(
        server=server,
        host=host,
        port=port,
        config=config,
        registry=registry,
        catalog=catalog,
        health=health_servicer,
        policies_started=starter,
    )
    log.info("holodeskd listening on %s", running.address)
    try:
        yield running
    finally:
        await running.stop()
