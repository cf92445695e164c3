"""A started holodeskd and its lifecycle: policies starting -> SERVING, SIGHUP, drain, stop.

Why its own module: serve() assembles the parts once; what happens to them after
(health going SERVING when every policy started, credentials reloaded on SIGHUP,
the ordered drain on stop: health, detached sessions, grace, recorder, policies,
live view, metrics) is RunningServer's job and reads on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from grpc_health.v1 import health_pb2

from holodesk.daemon.config import ListenAddress, ServerConfig
from holodesk.daemon.metrics import DaemonMetrics, MetricsExporter
from holodesk.daemon.policies.catalog import PolicyCatalog
from holodesk.daemon.rpc.auth import Authenticator
from holodesk.daemon.rpc.server_credentials import configured_credentials
from holodesk.daemon.sdnotify import notify
from holodesk.daemon.session.decoded_screens import DecodedScreens
from holodesk.daemon.session.recorder import Recorder
from holodesk.daemon.session.registry import SessionRegistry
from holodesk.daemon.web.app import WebServer
from holodesk.proto.v1 import agent_pb2

# The server's logger, as before the split: log filters and configs keep working.
log = logging.getLogger("holodesk.daemon.rpc.server")

AGENT_SERVICE = agent_pb2.DESCRIPTOR.services_by_name["AgentService"].full_name
CONTROL_SERVICE = agent_pb2.DESCRIPTOR.pool.FindServiceByName(
    "holodesk.v1.ControlService"
).full_name
COMPUTER_SERVICE = "holodesk.v1.ComputerService"
TRAINER_SERVICE = "holodesk.v1.TrainerService"
HEALTH_NAMES = ("", AGENT_SERVICE, CONTROL_SERVICE, COMPUTER_SERVICE, TRAINER_SERVICE)


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
        self.authenticator.credentials = configured_credentials(self.config)
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
        # Keep the port open while the last steps and Locate answers finish, so that a
        # session or Locate arriving now is refused by the daemon itself (UNAVAILABLE
        # with RetryInfo): a gRPC core already stopping answers such calls CANCELLED or
        # INTERNAL.
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


async def start_policies(catalog: PolicyCatalog, health_servicer: Any) -> None:
    try:
        await catalog.start()
    except Exception:
        log.exception("a policy failed to start; the daemon stays NOT_SERVING")
        raise
    for name in HEALTH_NAMES:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    log.info("policies ready: %s", ", ".join(p.name for p in catalog.policies))
    notify("READY=1")
