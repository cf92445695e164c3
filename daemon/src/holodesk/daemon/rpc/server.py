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
  configured on loopback. Roles: ``agent`` (AgentService) and ``admin``
  (everything). No or unknown credential: UNAUTHENTICATED; wrong role:
  PERMISSION_DENIED. Health and reflection stay open. Credentials never reach the
  logs (auth failures are logged by cause, and a filter redacts ``Bearer ...``).
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
import contextlib
import logging
import os
import socket
import ssl
import stat
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from holodesk.daemon.config import ListenAddress, ServerConfig
from holodesk.daemon.frames import FrameLimits
from holodesk.daemon.metrics import DaemonMetrics, MetricsExporter
from holodesk.daemon.policies.base import Policy
from holodesk.daemon.policies.catalog import PolicyCatalog
from holodesk.daemon.policies.computer import ComputerPolicy, heartbeat_for
from holodesk.daemon.policies.registry import create_policy
from holodesk.daemon.rpc.agent_service import AgentService
from holodesk.daemon.rpc.auth import Authenticator, AuthInterceptor
from holodesk.daemon.rpc.computer_service import ComputerService
from holodesk.daemon.rpc.control_service import ControlService
from holodesk.daemon.rpc.credentials import Credentials, CredentialsError, load_credentials
from holodesk.daemon.rpc.interceptor import ErrorInterceptor
from holodesk.daemon.rpc.metrics_interceptor import MetricsInterceptor
from holodesk.daemon.rpc.reflection import enable_reflection
from holodesk.daemon.sdnotify import notify
from holodesk.daemon.session.attached_desktops import AttachedDesktops
from holodesk.daemon.session.decoded_screens import DecodedScreens, screens_per_session_for
from holodesk.daemon.session.frame_memory import FrameMemory
from holodesk.daemon.session.recorder import Recorder
from holodesk.daemon.session.registry import SessionLimits, SessionRegistry
from holodesk.daemon.session.settings import SessionSettings
from holodesk.daemon.web.app import WebServer, start_web
from holodesk.proto.v1 import agent_pb2, agent_pb2_grpc, computer_pb2_grpc, control_pb2_grpc

log = logging.getLogger(__name__)

AGENT_SERVICE = agent_pb2.DESCRIPTOR.services_by_name["AgentService"].full_name
CONTROL_SERVICE = agent_pb2.DESCRIPTOR.pool.FindServiceByName(
    "holodesk.v1.ControlService"
).full_name
COMPUTER_SERVICE = "holodesk.v1.ComputerService"
HEALTH_NAMES = ("", AGENT_SERVICE, CONTROL_SERVICE, COMPUTER_SERVICE)


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
    authenticator: Authenticator
    listen_address: ListenAddress = field(default_factory=ListenAddress)
    metrics: DaemonMetrics = field(default_factory=DaemonMetrics)
    # The Prometheus endpoint, with --metrics-address.
    metrics_exporter: MetricsExporter | None = None
    # Session recordings (--record, --record-dir, SessionStart.recording).
    recorder: Recorder | None = None
    # The live view (--web; web/app.py).
    web: WebServer | None = None
    # Every session's decoded screens (one budget for all; decoded_screens.py).
    decoded_screens: DecodedScreens | None = None
    _stopped: bool = field(default=False, repr=False)

    @property
    def address(self) -> str:
        """Where clients connect: HOST:PORT, or unix:PATH."""
        if self.listen_address.is_unix:
            return self.listen_address.target
        return f"{self.host}:{self.port}"

    def reload_credentials(self) -> None:
        """Re-read --tokens-file (SIGHUP); on error the old credentials stay."""
        if not self.config.tokens_file:
            return
        self.authenticator.credentials = _load_credentials(self.config)
        log.info("credentials reloaded from %s", self.config.tokens_file)

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
        # Nobody can resume a session once the daemon is gone.
        dropped = self.registry.drop_detached("the daemon is shutting down")
        if dropped:
            log.info("dropped %d detached session(s)", dropped)
        self.policies_started.cancel()
        # Keep the port open while the last steps finish, so that a session or Locate
        # arriving now is refused by the daemon itself (UNAVAILABLE with RetryInfo):
        # a gRPC core already stopping answers such calls CANCELLED or INTERNAL.
        draining_since = time.monotonic()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.registry.wait_empty(), grace)
        await self.server.stop(max(0.0, grace - (time.monotonic() - draining_since)))
        # Sessions whose RPCs the stop cut short, if their own cleanup has not run yet.
        self.registry.close("the daemon stopped")
        if self.recorder is not None:
            # Every session has left the registry, its end queued: let it reach the disk.
            await self.recorder.close()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.policies_started
        await self.catalog.close()
        if self.web is not None:
            await self.web.stop()
        if self.metrics_exporter is not None:
            await asyncio.to_thread(self.metrics_exporter.stop)
        log.info("holodeskd stopped")


def _grpc_options(config: ServerConfig) -> list[tuple[str, Any]]:
    return [
        ("grpc.max_receive_message_length", config.max_message_bytes),
        ("grpc.max_send_message_length", config.max_message_bytes),
        # Steps can take minutes without a byte on the stream. Ping every connection
        # every 30 s (--keepalive-s), with or without data, and give up after 10 s
        # without an answer: a vanished client is noticed (and its session detached)
        # well inside the 60 s resume window.
        ("grpc.keepalive_time_ms", int(config.keepalive_s * 1000)),
        ("grpc.keepalive_timeout_ms", int(config.keepalive_timeout_s * 1000)),
        ("grpc.http2.max_pings_without_data", 0),
        # gRPC 1.85 enforces the ack deadline through the ping timeout (default 60 s);
        # the keepalive timeout alone leaves a half-open connection up for a minute.
        ("grpc.http2.ping_timeout_ms", int(config.keepalive_timeout_s * 1000)),
        # Clients may ping as often as every 10 s (ours ping every 60 s), even between
        # calls, without being told "too many pings".
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.so_reuseport", 0),
    ]


def _load_credentials(config: ServerConfig) -> Credentials:
    if not config.tokens_file:
        return Credentials()
    credentials = load_credentials(config.tokens_file)
    if credentials.empty:
        raise CredentialsError(f"{config.tokens_file}: no [[token]] or [[client]] entries")
    if config.client_ca and not credentials.clients:
        raise CredentialsError(
            f"{config.tokens_file}: --client-ca is set but there are no [[client]] entries "
            "mapping certificate CNs to roles"
        )
    return credentials


def _read_pem(path: str, flag: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise OSError(f"{flag} {path}: {exc.strerror or exc}") from exc


def _server_credentials(config: ServerConfig) -> Any:
    """TLS (and mTLS with --client-ca); checked with ssl first, for readable errors."""
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(
            config.tls_cert, config.tls_key
        )
        if config.client_ca:
            ssl.create_default_context(cafile=config.client_ca)
    except (ssl.SSLError, OSError) as exc:
        raise ValueError(
            f"TLS files unusable (--tls-cert {config.tls_cert}, --tls-key {config.tls_key}"
            + (f", --client-ca {config.client_ca}" if config.client_ca else "")
            + f"): {exc}"
        ) from exc
    ca = _read_pem(config.client_ca, "--client-ca") if config.client_ca else None
    return grpc.ssl_server_credentials(
        [(_read_pem(config.tls_key, "--tls-key"), _read_pem(config.tls_cert, "--tls-cert"))],
        root_certificates=ca,
        require_client_auth=ca is not None,
    )


def _refuse_live_socket(path: str) -> None:
    """gRPC unlinks whatever socket file is in the way, even a live daemon's."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise OSError(f"cannot listen on unix:{path}: the path exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        return  # a stale socket from a process that is gone: gRPC replaces it
    finally:
        probe.close()
    raise OSError(f"cannot listen on unix:{path}: another process is listening there")


def _bind(server: Any, config: ServerConfig, address: ListenAddress) -> int:
    credentials = _server_credentials(config) if config.tls else None
    previous_umask: int | None = None
    if address.unix_path is not None:
        _refuse_live_socket(address.unix_path)
        # Created 0600 from the start (no window where others could connect).
        previous_umask = os.umask(0o177)
    try:
        if credentials is not None:
            port = server.add_secure_port(address.target, credentials)
        else:
            port = server.add_insecure_port(address.target)
    except RuntimeError as exc:
        raise OSError(f"cannot listen on {config.listen}: {exc}") from exc
    finally:
        if previous_umask is not None:
            os.umask(previous_umask)
    if port == 0:
        raise OSError(f"cannot listen on {config.listen}")
    if address.unix_path is not None:
        os.chmod(address.unix_path, 0o600)
    return int(port)


def _warn_exposure(config: ServerConfig, address: ListenAddress, open_mode: bool) -> None:
    if address.is_loopback:
        return
    if open_mode:
        log.warning(
            "listening on %s with --insecure and no credentials: anyone who can reach it "
            "can drive the desktops",
            address.host,
        )
    elif not config.tls:
        log.warning(
            "listening on %s with --insecure and no TLS: tokens travel in plaintext",
            address.host,
        )


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
    credentials = _load_credentials(config)
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
        options=_grpc_options(config),
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
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in HEALTH_NAMES:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    enable_reflection((*HEALTH_NAMES[1:], health.SERVICE_NAME), server)

    _warn_exposure(config, address, open_mode)
    port = _bind(server, config, address)
    exporter = _start_metrics(config, metrics)
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
    starter = asyncio.create_task(_start_policies(catalog, health_servicer), name="policy-start")
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


def _start_metrics(config: ServerConfig, metrics: DaemonMetrics) -> MetricsExporter | None:
    if not config.metrics_address:
        return None
    exporter = MetricsExporter.start(config.metrics_address, metrics.registry)
    if exporter.exposed:
        log.warning(
            "metrics on %s are reachable from other machines (plain HTTP, no credentials)",
            exporter.url,
        )
    else:
        log.info("metrics on %s", exporter.url)
    return exporter


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
