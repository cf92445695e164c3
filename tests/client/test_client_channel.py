"""Channel settings: plaintext only on loopback unless asked, explicit limits."""

from __future__ import annotations

import pytest

from holodesk.client.channel import channel_options, host_of, is_loopback


@pytest.mark.parametrize(
    ("target", "host", "loopback"),
    [
        ("127.0.0.1:50051", "127.0.0.1", True),
        ("localhost:50051", "localhost", True),
        ("[::1]:50051", "::1", True),
        ("127.3.2.1:1", "127.3.2.1", True),
        ("unix:/run/holodesk.sock", "localhost", True),
        ("gpu-host.example:443", "gpu-host.example", False),
        ("10.0.0.7:50051", "10.0.0.7", False),
        ("[2001:db8::1]:443", "2001:db8::1", False),
        ("dns:///gpu-host:443", "gpu-host", False),
    ],
)
def test_loopback_detection(target: str, host: str, loopback: bool) -> None:
    assert host_of(target) == host
    assert is_loopback(target) is loopback


def test_options_set_message_limits_and_keepalive() -> None:
    options = dict(channel_options(1234))
    assert options["grpc.max_send_message_length"] == 1234
    assert options["grpc.max_receive_message_length"] == 1234
    assert options["grpc.keepalive_time_ms"] > 0
    assert options["grpc.keepalive_timeout_ms"] > 0
