"""Checks of the daemon from this machine: reachable, serving, who we are to it, clock.

Reachability is the standard gRPC health check (open to every caller), timed:
the first call includes connecting (and the TLS handshake), the next few are
plain round trips. Authentication is whatever GetServerInfo (admin) says about
our credentials; an agent token is told apart from a refused one by an empty
Locate call, which the daemon authenticates before it finds the request empty.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from holodesk.client.channel import ChannelSettings, check_settings, is_loopback, open_channel
from holodesk.client.doctor.findings import Finding, Status
from holodesk.proto.v1 import agent_pb2, agent_pb2_grpc, control_pb2, control_pb2_grpc

DAEMON, SERVER_INFO, AUTH, CLOCK = "daemon", "server info", "auth", "clock"
PINGS = 5
_SERVING = health_pb2.HealthCheckResponse.SERVING


@dataclass(frozen=True)
class DaemonOptions:
    target: str
    channel: ChannelSettings
    timeout_s: float = 5.0


async def _timed(call: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = await call()
    return result, (time.perf_counter() - started) * 1000


def _unreachable(options: DaemonOptions, error: grpc.aio.AioRpcError) -> Finding:
    code = error.code()
    where = options.target
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        detail = f"no answer from {where} within {options.timeout_s:g} s"
    else:
        detail = f"cannot reach the daemon at {where}: {code.name}: {error.details()}"
    fix = (
        "start it (holodeskd --listen HOST:PORT), or correct --server / $HOLODESK_SERVER"
        if is_loopback(where)
        else "check --server, that holodeskd runs there and listens on a reachable address "
        "(not 127.0.0.1), and that no firewall blocks the port"
    )
    if not check_settings(where, options.channel):
        fix += "; if it does, see the tls check"
    return Finding(DAEMON, Status.FAIL, detail, fix)


async def check_daemon(options: DaemonOptions) -> list[Finding]:
    """The daemon's findings, in table order (later checks skipped if it is unreachable)."""
    channel = open_channel(options.target, options.channel)
    try:
        return await _check(channel, options)
    finally:
        await channel.close()


async def _check(channel: grpc.aio.Channel, options: DaemonOptions) -> list[Finding]:
    health = health_pb2_grpc.HealthStub(channel)
    request = health_pb2.HealthCheckRequest(service="")

    async def ping() -> Any:
        return await health.Check(request, timeout=options.timeout_s)

    try:
        first, connect_ms = await _timed(ping)
        rtts = [(await _timed(ping))[1] for _ in range(PINGS)]
    except grpc.aio.AioRpcError as error:
        skipped = "the daemon is unreachable"
        return [
            _unreachable(options, error),
            *(Finding(name, Status.SKIP, skipped) for name in (SERVER_INFO, AUTH, CLOCK)),
        ]
    timing = (
        f"first call {connect_ms:.1f} ms (connecting included), round trip "
        f"{statistics.median(rtts):.2f} ms (median of {PINGS})"
    )
    if first.status == _SERVING:
        findings = [Finding(DAEMON, Status.OK, f"{options.target} is serving; {timing}")]
    else:
        findings = [
            Finding(
                DAEMON,
                Status.WARN,
                f"{options.target} answers but is not serving yet "
                f"({health_pb2.HealthCheckResponse.ServingStatus.Name(first.status)}); {timing}",
                "wait for its model to load; if it stays so, read the daemon's log "
                "(a policy that failed to start keeps it NOT_SERVING)",
            )
        ]
    info, auth = await _identify(channel, options)
    return [*findings, info, auth, _clock()]


async def _identify(channel: grpc.aio.Channel, options: DaemonOptions) -> tuple[Finding, Finding]:
    """(server info, auth): GetServerInfo needs admin; an agent passes an empty Locate."""
    token = options.channel.token
    control = control_pb2_grpc.ControlServiceStub(channel)
    try:
        info = await control.GetServerInfo(
            control_pb2.GetServerInfoRequest(), timeout=options.timeout_s
        )
    except grpc.aio.AioRpcError as error:
        if error.code() == grpc.StatusCode.UNAUTHENTICATED:
            skipped = Finding(SERVER_INFO, Status.SKIP, "not authenticated (see auth)")
            return skipped, _refused(options, error)
        if error.code() != grpc.StatusCode.PERMISSION_DENIED:
            return (
                Finding(
                    SERVER_INFO,
                    Status.FAIL,
                    f"GetServerInfo failed: {error.code().name}: {error.details()}",
                    "read the daemon's log around this time",
                ),
                Finding(AUTH, Status.SKIP, "not determined (GetServerInfo failed)"),
            )
        return await _agent_only(channel, options)
    policies = (
        ", ".join(f"{p.name}{'' if p.ready else ' (loading)'}" for p in info.policies) or "none"
    )
    detail = (
        f"holodeskd {info.version}; policies: {policies}; {info.active_sessions} active "
        f"session(s); messages up to {info.max_message_bytes / 2**20:g} MiB"
    )
    if token is None and options.channel.client_cert is None:
        auth = Finding(AUTH, Status.OK, "the daemon needs no token from this machine")
    else:
        auth = Finding(AUTH, Status.OK, f"{_credentials(options)} accepted (admin role)")
    return Finding(SERVER_INFO, Status.OK, detail), auth


def _credentials(options: DaemonOptions) -> str:
    if options.channel.token is not None:
        return f"token from {options.channel.token.source}"
    if options.channel.client_cert is not None:
        return f"client certificate {options.channel.client_cert}"
    return "this client"


async def _agent_only(channel: grpc.aio.Channel, options: DaemonOptions) -> tuple[Finding, Finding]:
    agent = agent_pb2_grpc.AgentServiceStub(channel)
    info = Finding(SERVER_INFO, Status.SKIP, "GetServerInfo needs an admin token")
    try:
        await agent.Locate(agent_pb2.LocateRequest(), timeout=options.timeout_s)
    except grpc.aio.AioRpcError as error:
        # INVALID_ARGUMENT: authenticated, then told the request is empty.
        if error.code() == grpc.StatusCode.INVALID_ARGUMENT:
            return info, Finding(
                AUTH,
                Status.OK,
                f"{_credentials(options)} accepted (agent role: runs sessions; "
                "operator controls need admin)",
            )
        if error.code() == grpc.StatusCode.UNAUTHENTICATED:
            return info, _refused(options, error)
        return info, Finding(
            AUTH,
            Status.FAIL,
            f"the daemon refused the agent service: {error.code().name}: {error.details()}",
            "give this machine a token with the agent role (holodeskd token new --role agent)",
        )
    return info, Finding(AUTH, Status.OK, "credentials accepted")


def _refused(options: DaemonOptions, error: grpc.aio.AioRpcError) -> Finding:
    token = options.channel.token
    make = (
        "on the daemon host: holodeskd token new --name NAME --role agent --append TOKENS_FILE, "
        "then reload it (kill -HUP its pid)"
    )
    if token is None:
        return Finding(
            AUTH,
            Status.FAIL,
            f"the daemon requires credentials and none were given ({error.details()})",
            "pass --token-file FILE (or set $HOLODESK_TOKEN_FILE) holding a token; "
            f"to make one, {make}",
        )
    return Finding(
        AUTH,
        Status.FAIL,
        f"the daemon refused the token from {token.source} ({error.details()})",
        f"check that the file holds the current token; to make a new one, {make}",
    )


def _clock() -> Finding:
    # GetServerInfoResponse carries when the daemon started, not its clock now.
    return Finding(
        CLOCK,
        Status.SKIP,
        "not measurable: the daemon's server info carries no clock reading",
        "keep both machines on NTP time sync (TLS certificates and logs rely on it)",
    )
