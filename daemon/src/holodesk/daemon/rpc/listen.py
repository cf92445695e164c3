"""Where and how the gRPC server listens: channel options, binding, exposure warnings.

Why its own module: the keepalive options, the Unix socket's 0600 mode (and never
taking over a live daemon's socket), TLS or plaintext ports and the warning for a
non-loopback address are one concern, the listening end, apart from which services
serve() assembles on it.
"""

from __future__ import annotations

import logging
import os
import socket
import stat
from typing import Any

from holodesk.daemon.config import ListenAddress, ServerConfig
from holodesk.daemon.rpc.server_credentials import tls_credentials

# The server's logger, as before the split: log filters and configs keep working.
log = logging.getLogger("holodesk.daemon.rpc.server")


def grpc_options(config: ServerConfig) -> list[tuple[str, Any]]:
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


def bind(server: Any, config: ServerConfig, address: ListenAddress) -> int:
    credentials = tls_credentials(config) if config.tls else None
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


def warn_exposure(config: ServerConfig, address: ListenAddress, open_mode: bool) -> None:
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
