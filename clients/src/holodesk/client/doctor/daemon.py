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

from holodesk.client import convert
from holodesk.client.channel import ChannelSettings, check_settings, is_loopback, open_channel
from holodesk.client.doctor.findings import Finding, Status
from holodesk.proto.v1 import agent_pb2, agent_pb2_grpc, control_pb2, control_pb2_grpc

DAEMON, SERVER_INFO, PINNING, AUTH, CLOCK = "daemon", "server info", "pinning", "auth", "clock"
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
    info, pinning, auth, clock = await _identify(channel, options)
    return [*findings, info, pinning, auth, clock]


async def _identify(
    channel: grpc.aio.Channel, options: DaemonOptions
) -> tuple[Finding, Finding, Finding, Finding]:
    """(server info, pinning, auth, clock): GetServerInfo needs admin; an agent passes
    an empty Locate (and cannot read the daemon's policies or clock)."""
    token = options.channel.token
    control = control_pb2_grpc.ControlServiceStub(channel)
    try:
        sent = time.time()
        info = await control.GetServerInfo(
            control_pb2.GetServerInfoRequest(), timeout=options.timeout_s
        )
        answered = time.time()
    except grpc.aio.AioRpcError as error:
        if error.code() == grpc.StatusCode.UNAUTHENTICATED:
            skipped = Finding(SERVER_INFO, Status.SKIP, "not authenticated (see auth)")
            return (
                skipped,
                _no_pinning("not authenticated"),
                _refused(options, error),
                _no_clock("not authenticated"),
            )
        if error.code() != grpc.StatusCode.PERMISSION_DENIED:
            return (
                Finding(
                    SERVER_INFO,
                    Status.FAIL,
                    f"GetServerInfo failed: {error.code().name}: {error.details()}",
                    "read the daemon's log around this time",
                ),
                _no_pinning("GetServerInfo failed"),
                Finding(AUTH, Status.SKIP, "not determined (GetServerInfo failed)"),
                _no_clock("GetServerInfo failed"),
            )
        info_finding, auth = await _agent_only(channel, options)
        return (
            info_finding,
            _no_pinning("reading the daemon's policies needs an admin token"),
            auth,
            _no_clock("reading the daemon's clock needs an admin token"),
        )
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
    clock = (
        clock_finding(info, sent, answered)
        if info.HasField("now")
        else _no_clock(
            "this daemon does not report its clock (older than GetServerInfoResponse.now)"
        )
    )
    return Finding(SERVER_INFO, Status.OK, detail), pinning_finding(info), auth, clock


def pinning_finding(info: control_pb2.GetServerInfoResponse) -> Finding:
    """What each policy's answers depend on (model, engine, dialect, prompt hash, resize,
    coordinates, weights version), as `holodesk eval` records it: two daemons, or one
    before and after a restart, ask the same way only if these agree."""
    shown = [_pinned(policy) for policy in info.policies]
    if not shown:
        return _no_pinning("the daemon serves no policy")
    return Finding(PINNING, Status.OK, "; ".join(shown))


def _pinned(policy: control_pb2.PolicyInfo) -> str:
    if not policy.HasField("pinning"):
        return f"{policy.name}: does not say what its answers depend on"
    pinning = convert.pinning_from_pb(policy.pinning)
    parts = [
        f"{pinning.model} ({pinning.engine})" if pinning.engine else pinning.model,
        f"dialect {pinning.dialect}" if pinning.dialect else "",
        f"prompt {pinning.prompt_hash[:19]}" if pinning.prompt_hash else "",
        f"resize {pinning.resize_rule}" if pinning.resize_rule else "",
        pinning.coordinates,
        f"weights {pinning.policy_version_label or pinning.policy_version}"
        if pinning.policy_version or pinning.policy_version_label
        else "",
    ]
    return f"{policy.name}: " + ", ".join(part for part in parts if part)


def _no_pinning(why: str) -> Finding:
    return Finding(PINNING, Status.SKIP, why)


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


# Clocks further apart than this are worth a warning (recordings, logs and metrics
# of the two machines no longer line up); past the second, TLS certificates can look
# not yet valid or expired to one side.
CLOCK_WARN_S = 2.0
CLOCK_FAIL_S = 300.0
_NTP_FIX = "turn on NTP time sync on both machines (timedatectl set-ntp true on Linux)"


def clock_finding(info: control_pb2.GetServerInfoResponse, sent: float, answered: float) -> Finding:
    """The daemon's clock against ours, read at the midpoint of the call."""
    skew = (info.now.seconds + info.now.nanos / 1e9) - (sent + answered) / 2
    uncertainty = (answered - sent) / 2
    detail = f"the daemon's clock is {skew:+.3f} s from this machine's (±{uncertainty:.3f} s)"
    if abs(skew) - uncertainty > CLOCK_FAIL_S:
        return Finding(CLOCK, Status.FAIL, detail, _NTP_FIX)
    if abs(skew) - uncertainty > CLOCK_WARN_S:
        return Finding(CLOCK, Status.WARN, detail, _NTP_FIX)
    return Finding(CLOCK, Status.OK, detail)


def _no_clock(why: str) -> Finding:
    return Finding(CLOCK, Status.SKIP, f"not measured: {why}", _NTP_FIX)
