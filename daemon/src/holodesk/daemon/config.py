"""Daemon settings (what the CLI flags become)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field

MIB = 1024 * 1024
DEFAULT_LISTEN = "127.0.0.1:50051"


@dataclass(frozen=True)
class ServerConfig:
    listen: str = DEFAULT_LISTEN
    # Built through the policy registry unless serve() is handed policies directly.
    # The CPU baseline until a model engine (vllm, openai, transformers) is configured.
    policy: str = "ocr"
    policy_options: Mapping[str, str] = field(default_factory=dict)
    # gRPC's own limit on any message, both directions: larger ones fail with
    # RESOURCE_EXHAUSTED before the daemon sees them.
    max_message_bytes: int = 32 * MIB
    # A frame's image bytes; larger ones are rejected with INVALID_ARGUMENT.
    max_frame_bytes: int = 16 * MIB
    max_frame_pixels: int = 40_000_000
    # Default and ceiling for a session's model steps.
    max_steps: int = 100
    # How long running steps may finish when the daemon stops.
    grace_s: float = 10.0

    def __post_init__(self) -> None:
        if self.max_message_bytes <= 0 or self.max_frame_bytes <= 0:
            raise ValueError("message and frame limits must be positive")
        if self.max_frame_bytes > self.max_message_bytes:
            raise ValueError(
                f"the frame limit ({self.max_frame_bytes} B) exceeds the message limit "
                f"({self.max_message_bytes} B): no such frame could ever arrive"
            )
        if self.max_steps <= 0:
            raise ValueError("max_steps must be positive")
        if self.grace_s < 0:
            raise ValueError("grace_s cannot be negative")
        split_listen(self.listen)


def split_listen(listen: str) -> tuple[str, int]:
    """HOST:PORT (IPv6 as [::1]:PORT) -> (host, port)."""
    host, sep, port_text = listen.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"listen address {listen!r} is not HOST:PORT")
    return host, int(port_text)


def is_loopback(host: str) -> bool:
    bare = host.strip("[]")
    if bare == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False
