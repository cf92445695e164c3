"""Opens the gRPC channel to a daemon: TLS unless the daemon is on this machine.

Credentials: a bearer token (`authorization: Bearer ...` on every call) and, for
mTLS, a client certificate. The token always travels as gRPC call credentials.
gRPC refuses those on a plaintext channel, so a loopback or Unix-socket daemon is
reached with gRPC's local channel credentials: still plaintext on the wire (the
daemon's plain port accepts it), but gRPC checks that the peer really is on this
machine. (An interceptor adding the header would do too, but grpc.aio leaks a task
per stream it intercepts.) A token is never sent in plaintext to another machine.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

import grpc
import grpc.aio

from holodesk.client.credentials import BearerToken

# Frames are encoded to the daemon's FrameSpec first; this bounds what a bug could send.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# A ping every 60 s detects a dead daemon or a NAT drop during long model steps.
# gRPC's default of at most 2 pings without data keeps a default-configured server
# from answering GOAWAY (too_many_pings) while a human takes minutes on ask_user.
KEEPALIVE_TIME_MS = 60_000
KEEPALIVE_TIMEOUT_MS = 20_000


class ChannelError(ValueError):
    """The channel settings cannot work (missing file, token over plaintext ...)."""


@dataclass(frozen=True)
class ChannelSettings:
    # None: plaintext for loopback and Unix-socket targets, TLS for anything else.
    insecure: bool | None = None
    # PEM roots that sign the daemon's certificate (default: the system's).
    ca_cert: Path | None = None
    # mTLS: this client's certificate chain and private key (PEM), both or neither.
    client_cert: Path | None = None
    client_key: Path | None = None
    token: BearerToken | None = None
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    keepalive_time_ms: int = KEEPALIVE_TIME_MS
    keepalive_timeout_ms: int = KEEPALIVE_TIMEOUT_MS


def channel_options(
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    keepalive_time_ms: int = KEEPALIVE_TIME_MS,
    keepalive_timeout_ms: int = KEEPALIVE_TIMEOUT_MS,
) -> list[tuple[str, int]]:
    return [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.keepalive_time_ms", keepalive_time_ms),
        ("grpc.keepalive_timeout_ms", keepalive_timeout_ms),
        # Recent gRPC cores time unanswered pings out by this (default 60 s), not
        # by the keepalive timeout alone.
        ("grpc.http2.ping_timeout_ms", keepalive_timeout_ms),
        ("grpc.keepalive_permit_without_calls", 0),
        # A session reconnects through a fresh channel; with the global pool it would
        # share the dead connection's subchannel, still in gRPC's own backoff, and
        # fail at once instead of trying.
        ("grpc.use_local_subchannel_pool", 1),
    ]


def host_of(target: str) -> str:
    """The host part of HOST:PORT, [IPV6]:PORT, a bare host, or a unix: target."""
    if target.startswith(("unix:", "unix-abstract:")):
        return "localhost"
    target = target.removeprefix("dns:///").removeprefix("ipv4:").removeprefix("ipv6:")
    if target.startswith("["):
        return target[1 : target.find("]")]
    if target.count(":") == 1:
        return target.split(":", 1)[0]
    return target


def is_loopback(target: str) -> bool:
    host = host_of(target)
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_settings(target: str, settings: ChannelSettings) -> bool:
    """Whether the channel will be plaintext; ChannelError if the settings cannot work."""
    if not target:
        raise ChannelError("no daemon address given (expected HOST:PORT or unix:/path)")
    if (settings.client_cert is None) != (settings.client_key is None):
        raise ChannelError("mTLS needs both a client certificate and its private key")
    insecure = is_loopback(target) if settings.insecure is None else settings.insecure
    if insecure and settings.client_cert is not None:
        raise ChannelError("a client certificate needs TLS: drop --insecure")
    if insecure and settings.token is not None and not is_loopback(target):
        raise ChannelError(
            f"refusing to send the token in plaintext to {host_of(target)}: "
            "anyone on the network could read it; use TLS (drop --insecure)"
        )
    if not insecure:
        for path, what in (
            (settings.ca_cert, "CA certificate"),
            (settings.client_cert, "client certificate"),
            (settings.client_key, "client key"),
        ):
            _read(path, what)
    return insecure


def open_channel(target: str, settings: ChannelSettings | None = None) -> grpc.aio.Channel:
    settings = settings or ChannelSettings()
    insecure = check_settings(target, settings)
    options = channel_options(
        settings.max_message_bytes, settings.keepalive_time_ms, settings.keepalive_timeout_ms
    )
    if insecure:
        if settings.token is None:
            return grpc.aio.insecure_channel(target, options=options)
        local = grpc.local_channel_credentials(
            grpc.LocalConnectionType.UDS
            if target.startswith(("unix:", "unix-abstract:"))
            else grpc.LocalConnectionType.LOCAL_TCP
        )
        return grpc.aio.secure_channel(
            target, grpc.composite_channel_credentials(local, _bearer(settings.token)), options
        )
    credentials = grpc.ssl_channel_credentials(
        root_certificates=_read(settings.ca_cert, "CA certificate"),
        private_key=_read(settings.client_key, "client key"),
        certificate_chain=_read(settings.client_cert, "client certificate"),
    )
    if settings.token is not None:
        credentials = grpc.composite_channel_credentials(credentials, _bearer(settings.token))
    return grpc.aio.secure_channel(target, credentials, options=options)


def _bearer(token: BearerToken) -> grpc.CallCredentials:
    # Sends `authorization: Bearer <token>` with every call.
    return grpc.access_token_call_credentials(token.value)


def _read(path: Path | None, what: str) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as error:
        raise ChannelError(f"cannot read the {what} {path}: {error.strerror}") from None
