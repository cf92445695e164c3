"""holodeskd: the gRPC daemon that runs computer-use agent sessions.

Run it:

    holodeskd --listen 127.0.0.1:50051 --policy scripted --script steps.json

Port 0 picks a free port; the daemon prints ``holodeskd listening on ADDRESS``
once it accepts connections (tests and the client's demo read that line).

What it serves (contract: protos/holodesk/v1):

- ``holodesk.v1.AgentService``: RunSession streams (one agent run each) and Locate.
- ``holodesk.v1.ControlService``: list / pause / resume / cancel sessions, server info.
- ``holodesk.v1.ComputerService``: agents in any language drive desktops that
  ``holodesk attach`` lent (the ``computer`` policy every daemon serves; roles
  operator and admin; computer_service.py, docs/computer-api.md).
- ``grpc.health.v1.Health``: NOT_SERVING until every policy's start() returned
  (model loaded), for "" and for each service name; NOT_SERVING again on shutdown.
- Server reflection for all of the above, as grpc.reflection.v1 and v1alpha
  (``grpcurl -plaintext HOST:PORT list``).
- ``holodesk.v1.TrainerService``: an RL trainer changes a policy's weights or LoRA
  adapter while its sessions run (role trainer or admin; trainer_service.py,
  docs/online-rl.md).
- With ``--metrics-address``: Prometheus metrics over HTTP (metrics.py), counted on a
  registry of this server's own.

Security (details: auth.py, credentials.py):

- Where it listens: loopback by default. ``--listen unix:/run/holodesk/holodeskd.sock``
  makes a Unix socket with mode 0600 (an existing live socket is never taken over).
  A non-loopback TCP address is refused unless TLS (``--tls-cert``, ``--tls-key``)
  AND a credential method (``--tokens-file``, or ``--client-ca`` for mTLS) are
  configured, or ``--insecure`` is given explicitly.
- Who may call: bearer tokens (``authorization: Bearer <token>`` metadata, checked
  against SHA-256 digests in the credentials file, in constant time), mTLS client
  certificates (``--client-ca``; the subject CN maps to a role in the same file),
  callers on a private Unix socket (admin), or everyone when no credential is
  configured on loopback. Roles: ``agent`` (AgentService), ``operator`` (and
  ComputerService), ``trainer`` (and TrainerService) and ``admin`` (everything).
  No or unknown credential: UNAUTHENTICATED; wrong role: PERMISSION_DENIED.
  Health and reflection stay open. Credentials never reach the logs (auth
  failures are logged by cause, and a filter redacts ``Bearer ...``).
  SIGHUP reloads the credentials file.

Limits, each breach a precise status while everyone else is served on:

- messages above --max-message-mb: RESOURCE_EXHAUSTED (gRPC's own check);
- frames above --max-frame-mb or --max-frame-pixels, undecodable images or
  messages: INVALID_ARGUMENT naming the field;
- more than --max-sessions sessions, or --max-sessions-per-principal for one
  caller: RESOURCE_EXHAUSTED with QuotaFailure and RetryInfo;
- frames held by all sessions past --max-frame-memory-mb: RESOURCE_EXHAUSTED with
  QuotaFailure and RetryInfo, for a new session or for the frame that would not
  fit (that session stays detached, resumable; frame_memory.py);
- --max-steps: the session ends STEP_LIMIT; --max-session-s: it ends
  TIME_LIMIT (reason "time limit: ..."); a policy stuck past --step-timeout-s: the
  session ends FAILED naming the step (Locate: DEADLINE_EXCEEDED). A client's own
  RPC deadline cancels the call and the policy's work for it.

Resume: when a RunSession stream drops before its session ended, the session is
detached (its policy work aborted) and kept for --resume-window-s; a new stream
whose SessionStart carries the resume token (same principal) continues it, with a
fresh token, the last step and the ids of actions whose results never arrived; the
next step is decided from a fresh frame, and no batch is ever sent twice
(session_runner.py). Unknown or expired token: NOT_FOUND; a session still attached
to a live stream: FAILED_PRECONDITION. The server pings every connection every
--keepalive-s (30 s), data or not, and drops it after 10 s without an answer, so a
silently vanished client is noticed within the resume window; clients may ping
every 10 s or slower (the holodesk client pings every 60 s).

Other errors are precise status codes with google.rpc details (see errors.py):
FAILED_PRECONDITION for protocol-order violations, NOT_FOUND for unknown session
ids or policies, UNAVAILABLE with RetryInfo while a policy starts or the daemon
stops, INTERNAL naming the exception otherwise.

On SIGTERM or SIGINT: health goes NOT_SERVING, new RPCs are refused, detached
sessions are dropped, sessions waiting for their client end with UNAVAILABLE,
steps being decided get up to --grace-s to finish and send their actions, then
the policies close and the process exits 0. Every session leaving the registry
passes through `SessionRegistry.listeners`, where the recorder writes each
recording's end; stop() returns once every recording reached the disk (--record).
Under systemd (Type=notify) it sends READY=1 when serving and STOPPING=1 when it
starts draining.

Programmatic use (tests, the client's demo command):

    async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
        channel = grpc.aio.insecure_channel(running.address)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from holodesk.daemon.config import ServerConfig
from holodesk.daemon.frames import FrameLimits
from holodesk.daemon.metrics import DaemonMetrics
from holodesk.daemon.policies.base import Policy
from holodesk.daemon.policies.catalog import PolicyCatalog
from holodesk.daemon.policies.computer import ComputerPolicy, heartbeat_for
from holodesk.daemon.policies.registry import create_policy
from holodesk.daemon.rpc.agent_service import AgentService
from holodesk.daemon.rpc.auth import Authenticator, AuthInterceptor
from holodesk.daemon.rpc.computer_service import ComputerService
from holodesk.daemon.rpc.control_service import ControlService
from holodesk.daemon.rpc.interceptor import ErrorInterceptor
from holodesk.daemon.rpc.listen import bind, grpc_options, warn_exposure
from holodesk.daemon.rpc.metrics_endpoint import start_metrics
from holodesk.daemon.rpc.metrics_interceptor import MetricsInterceptor
from holodesk.daemon.rpc.reflection import enable_reflection
from holodesk.daemon.rpc.running import HEALTH_NAMES, RunningServer, start_policies
from holodesk.daemon.rpc.server_credentials import configured_credentials
from holodesk.daemon.rpc.trainer_service import TrainerService
from holodesk.daemon.session.attached_desktops import AttachedDesktops
from holodesk.daemon.session.decoded_screens import DecodedScreens, screens_per_session_for
from holodesk.daemon.session.frame_memory import FrameMemory
from holodesk.daemon.session.recorder import Recorder
from holodesk.daemon.session.registry import SessionLimits, SessionRegistry
from holodesk.daemon.session.settings import SessionSettings
from holodesk.daemon.web.app import start_web
from holodesk.proto.v1 import (
    agent_pb2_grpc,
    computer_pb2_grpc,
    control_pb2_grpc,
    trainer_pb2_grpc,
)

__all__ = ["RunningServer", "serve"]

log = logging.getLogger(__name__)


@asynccontextmanager
async def serve(
    config: ServerConfig,
    policies: Sequence[Policy] | None = None,
    metrics: DaemonMetrics | None = None,
) -> AsyncIterator[RunningServer]:
    """Start holodeskd in this event loop; stop (draining) when the block exits.

    `metrics`: where to count (default: fresh, on a registry of this server's own).
    """
    address = config.address
    credentials = configured_credentials(config)
    # Open mode (everyone is admin) only on loopback TCP or --insecure without any
    # credential; a Unix socket is guarded by its file permissions instead.
    open_mode = not config.has_credentials and not address.is_unix
    authenticator = Authenticator(credentials, open_mode=open_mode, unix_socket=address.unix_path)
    if policies is None:
        policies = [create_policy(config.policy, config.policy_options)]
    # Desktops attached for ComputerService callers (computer.proto), through the
    # `computer` policy every daemon serves besides its own.
    desktops = AttachedDesktops()
    computer = ComputerPolicy(desktops, heartbeat_s=heartbeat_for(config.step_timeout_s))
    catalog = PolicyCatalog([*policies, computer])
    registry = SessionRegistry(
        SessionLimits(
            max_sessions=config.max_sessions,
            max_per_principal=config.sessions_per_principal,
            max_session_s=config.max_session_s,
            resume_window_s=config.resume_window_s,
        ),
        FrameMemory(config.max_frame_memory_bytes),
    )
    limits = FrameLimits(max_bytes=config.max_frame_bytes, max_pixels=config.max_frame_pixels)
    recorder = Recorder(config.record_dir or None, default_on=config.record)
    recorder.prepare()
    registry.listeners.append(recorder.session_left)
    registry.observers.append(recorder.observe)
    metrics = metrics if metrics is not None else DaemonMetrics()
    metrics.watch(registry)
    settings = SessionSettings(
        frame_limits=limits,
        max_steps=config.max_steps,
        step_timeout_s=config.step_timeout_s,
        first_observation_timeout_s=config.first_observation_timeout_s,
        idle_timeout_s=config.idle_timeout_s,
        log_task=config.log_task,
        recorder=recorder,
        accept_deltas=config.frame_deltas,
        decoded_screens=DecodedScreens(
            config.decoded_screen_bytes,
            config.raw_screen_bytes,
            screens_per_session_for(policy.history_frames for policy in catalog.policies),
        ),
    )

    if settings.decoded_screens is not None:
        metrics.watch_screens(settings.decoded_screens)

    server = grpc.aio.server(
        # Metrics outermost: they see the status the error interceptor chose.
        interceptors=[
            MetricsInterceptor(metrics),
            ErrorInterceptor(),
            AuthInterceptor(authenticator),
        ],
        options=grpc_options(config),
    )
    agent_pb2_grpc.add_AgentServiceServicer_to_server(
        AgentService(registry, catalog, settings), server
    )
    desktops.watch(registry)
    computer_pb2_grpc.add_ComputerServiceServicer_to_server(
        ComputerService(desktops, registry), server
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
    trainer_pb2_grpc.add_TrainerServiceServicer_to_server(TrainerService(registry, catalog), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in HEALTH_NAMES:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    enable_reflection((*HEALTH_NAMES[1:], health.SERVICE_NAME), server)

    warn_exposure(config, address, open_mode)
    port = bind(server, config, address)
    exporter = start_metrics(config, metrics)
    try:
        await server.start()
    except BaseException:
        if exporter is not None:
            exporter.stop()
        raise
    try:
        web_server = await start_web(config, registry, authenticator)
    except BaseException:
        if exporter is not None:
            exporter.stop()
        await server.stop(None)
        raise
    starter = asyncio.create_task(start_policies(catalog, health_servicer), name="policy-start")
    running = RunningServer(
        server=server,
        host=address.host,
        port=port,
        config=config,
        registry=registry,
        catalog=catalog,
        health=health_servicer,
        policies_started=starter,
        authenticator=authenticator,
        listen_address=address,
        metrics=metrics,
        metrics_exporter=exporter,
        recorder=recorder,
        web=web_server,
        decoded_screens=settings.decoded_screens,
    )
    log.info(
        "holodeskd listening on %s (%s%s)",
        running.address,
        "TLS" if config.tls else "plaintext",
        ", mTLS" if config.client_ca else "",
    )
    try:
        yield running
    finally:
        await running.stop()
