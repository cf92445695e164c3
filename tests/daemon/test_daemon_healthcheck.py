"""`python -m holodesk.daemon.healthcheck`, the probe for containers and Kubernetes,
against a real daemon: plaintext and TLS, loading, serving and unreachable."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from holodesk.daemon.healthcheck import check, main
from tests.daemon.support import GUARD_S, GatedPolicy, running_daemon, scripted_policy
from tests.support.certs import make_pki


async def test_loading_then_serving() -> None:
    policy = GatedPolicy([])
    async with running_daemon([policy], wait_ready=False) as daemon:
        address = daemon.running.address
        assert await asyncio.to_thread(check, address) == 1
        policy.release.set()
        await asyncio.wait_for(asyncio.shield(daemon.running.policies_started), GUARD_S)
        assert await asyncio.to_thread(main, [address]) == 0


def test_unreachable_is_exit_status_2() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        assert check(f"127.0.0.1:{port}", timeout_s=2) == 2


async def test_tls_daemon_probed_on_loopback_by_certificate_name(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    async with running_daemon(
        [scripted_policy([])], tls_cert=str(pki.server_cert), tls_key=str(pki.server_key)
    ) as daemon:
        address = f"127.0.0.1:{daemon.running.port}"
        ok = await asyncio.to_thread(
            main, [address, "--ca-cert", str(pki.ca_cert), "--server-name", "localhost"]
        )
        assert ok == 0
        # A plaintext probe, or one trusting another CA, is refused: status 2, not a hang.
        assert await asyncio.to_thread(check, address, timeout_s=2) == 2
        wrong = await asyncio.to_thread(
            check, address, ca_cert=pki.other_ca_cert, server_name="localhost", timeout_s=2
        )
        assert wrong == 2
