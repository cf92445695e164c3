"""Opens the gRPC channel to a daemon: TLS unless the daemon is on this machine."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import grpc
import grpc.aio

# Frames are encoded to the daemon's FrameSpec first; this bounds what a bug could send.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# A ping every 60 s detects a dead daemon or a NAT drop during long model steps.
# gRPC's default of at most 2 pings without data keeps a default-configured server
# from answering GOAWAY (too_many_pings) while a human takes minutes on ask_user.
KEEPALIVE_TIME_MS = 60_000
KEEPALIVE_TIMEOUT_MS = 20_000


def channel_options(max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> list[tuple[str, int]]:
    return [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
        ("grpc.keepalive_permit_without_calls", 0),
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


def open_channel(
    target: str,
    *,
    insecure: bool | None = None,
    root_certificates: Path | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> grpc.aio.Channel:
    """`insecure=None`: plaintext for loopback targets, TLS for anything else."""
    if not target:
        raise ValueError("no daemon address given (expected HOST:PORT)")
    options = channel_options(max_message_bytes)
    if insecure is None:
        insecure = is_loopback(target)
    if insecure:
        return grpc.aio.insecure_channel(target, options=options)
    roots = root_certificates.read_bytes() if root_certificates else None
    credentials = grpc.ssl_channel_credentials(root_certificates=roots)
    return grpc.aio.secure_channel(target, credentials, options=options)
