"""`holodesk doctor` against a real holodeskd (serve() on 127.0.0.1:0, in a thread of its
own so the doctor's asyncio.run can call it): reachable, auth, TLS."""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.cli import main
from holodesk.client.doctor.command import check_remote, configure
from holodesk.client.doctor.daemon import clock_finding
from holodesk.client.doctor.findings import Status
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.policies.base import Policy
from holodesk.daemon.policies.ocr.policy import OcrPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.proto.v1 import control_pb2
from tests.daemon.support import GatedPolicy, Tokens, scripted_policy, write_tokens
from tests.support.certs import CertificateAuthority, make_pki

REMOTE_CHECKS = ["tls", "daemon", "server info", "pinning", "auth", "clock"]


@contextmanager
def daemon_thread(*, policies: Sequence[Policy] | None = None, **config: Any) -> Iterator[str]:
    """A real daemon serving on its own loop and thread; yields its address."""
    loop = asyncio.new_event_loop()
    ready: asyncio.Future[str] = loop.create_future()
    stop = asyncio.Event()

    async def main_() -> None:
        settings = ServerConfig(listen="127.0.0.1:0", **config)
        try:
            async with serve(settings, policies=policies or [scripted_policy([])]) as running:
                ready.set_result(running.address)
                await stop.wait()
        except BaseException as error:
            if not ready.done():
                ready.set_exception(error)
            raise

    thread = threading.Thread(target=loop.run_until_complete, args=(main_(),), daemon=True)
    thread.start()
    try:
        yield asyncio.run_coroutine_threadsafe(_wait(ready), loop).result(30)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)
        loop.close()


async def _wait(ready: asyncio.Future[str]) -> str:
    return await ready


def doctor(*argv: str) -> dict[str, tuple[Status, str, str]]:
    parser = argparse.ArgumentParser()
    configure(parser)
    findings = check_remote(parser.parse_args(list(argv)))
    return {f.check: (f.status, f.detail, f.fix) for f in findings}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_local_open_daemon_is_reachable_and_needs_no_token() -> None:
    with daemon_thread() as address:
        found = doctor("--server", address)
    assert list(found) == REMOTE_CHECKS
    assert found["tls"][:2] == (Status.OK, "plaintext to a daemon on this machine")
    status, detail, _ = found["daemon"]
    assert status is Status.OK
    assert detail.startswith(f"{address} is serving; first call ")
    assert "round trip" in detail
    assert "(median of 5)" in detail
    assert found["server info"][0] is Status.OK
    # `computer` (attached desktops, computer.proto) is served by every daemon.
    assert "policies: scripted, computer;" in found["server info"][1]
    assert "0 active session(s)" in found["server info"][1]
    assert found["auth"][:2] == (Status.OK, "the daemon needs no token from this machine")
    # Same machine, same clock: within the measurement's own uncertainty.
    status, detail, _ = found["clock"]
    assert status is Status.OK
    assert detail.startswith("the daemon's clock is ")


def test_each_policys_pinning_is_shown() -> None:
    """What `holodesk eval` pins a run to, per policy; a policy that says nothing
    (attached desktops' `computer`) is named as such."""
    with daemon_thread(policies=[OcrPolicy()]) as address:
        found = doctor("--server", address)
    status, detail, _ = found["pinning"]
    assert status is Status.OK
    ocr, computer = detail.split("; ")
    assert ocr.startswith("ocr: tesseract ")
    assert "(ocr)" in ocr
    assert "prompt sha256:" in ocr
    assert computer == "computer: does not say what its answers depend on"


def _info_at(seconds: float) -> control_pb2.GetServerInfoResponse:
    info = control_pb2.GetServerInfoResponse()
    info.now.seconds = int(seconds)
    info.now.nanos = int((seconds % 1) * 1e9)
    return info


def test_clock_skew_is_judged_beyond_the_round_trip() -> None:
    sent, answered = 1_000_000.0, 1_000_000.2  # a 200 ms call: ±0.1 s of uncertainty
    middle = 1_000_000.1
    assert clock_finding(_info_at(middle + 1.5), sent, answered).status is Status.OK
    warn = clock_finding(_info_at(middle - 45), sent, answered)
    assert warn.status is Status.WARN
    assert "-45.000 s" in warn.detail
    assert "NTP" in warn.fix
    assert clock_finding(_info_at(middle + 3600), sent, answered).status is Status.FAIL


@pytest.fixture
def tokens(tmp_path: Path) -> Tokens:
    tokens = write_tokens(tmp_path, ops="admin", laptop="agent")
    for name, token in tokens.by_name.items():
        (tmp_path / name).write_text(token + "\n")
    (tmp_path / "stale").write_text("hdk_" + "0" * 40 + "\n")
    return tokens


def test_tokens_accepted_by_role_and_refused_with_the_fix(tokens: Tokens) -> None:
    folder = tokens.path.parent
    with daemon_thread(tokens_file=str(tokens.path)) as address:
        admin = doctor("--server", address, "--token-file", str(folder / "ops"))
        agent = doctor("--server", address, "--token-file", str(folder / "laptop"))
        wrong = doctor("--server", address, "--token-file", str(folder / "stale"))
        none = doctor("--server", address)
    assert admin["auth"][:2] == (Status.OK, f"token from {folder / 'ops'} accepted (admin role)")
    assert admin["server info"][0] is Status.OK

    assert agent["auth"][0] is Status.OK
    assert "agent role" in agent["auth"][1]
    assert agent["server info"][:2] == (Status.SKIP, "GetServerInfo needs an admin token")

    status, detail, fix = wrong["auth"]
    assert status is Status.FAIL
    assert detail.startswith(f"the daemon refused the token from {folder / 'stale'}")
    assert "holodeskd token new" in fix
    assert "kill -HUP" in fix
    assert wrong["daemon"][0] is Status.OK  # health stays open to everyone

    status, detail, fix = none["auth"]
    assert status is Status.FAIL
    assert "requires credentials and none were given" in detail
    assert "--token-file" in fix


def test_an_unreachable_daemon_fails_with_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    address = f"127.0.0.1:{free_port()}"
    code = main(["doctor", "--json", "--backend", "fake", "--no-estop", "--server", address])
    findings = {f["check"]: f for f in json.loads(capsys.readouterr().out)}
    assert code == 1
    daemon = findings["daemon"]
    assert daemon["status"] == "fail"
    assert daemon["detail"].startswith(f"cannot reach the daemon at {address}: UNAVAILABLE")
    assert daemon["fix"].startswith("start it (holodeskd --listen HOST:PORT)")
    for name in ("server info", "auth", "clock"):
        assert findings[name]["status"] == "skip"
        assert findings[name]["detail"] == "the daemon is unreachable"


def test_a_daemon_still_loading_is_a_warning() -> None:
    gated = GatedPolicy([])
    with daemon_thread(policies=[gated]) as address:
        found = doctor("--server", address)
    status, detail, fix = found["daemon"]
    assert status is Status.WARN
    assert "not serving yet (NOT_SERVING)" in detail
    assert "model to load" in fix


def test_the_whole_command_exits_zero_against_a_healthy_daemon(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with daemon_thread() as address:
        code = main(["doctor", "--json", "--backend", "fake", "--no-estop", "--server", address])
    statuses = [f["status"] for f in json.loads(capsys.readouterr().out)]
    assert code == 0
    assert statuses == ["ok"] * 4 + ["skip"] + ["ok"] * 6


# TLS, with the throwaway CA of tests/support/certs.py -----------------------------------


def test_tls_verified_and_a_certificate_expiring_soon_is_warned(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    tls: dict[str, Any] = {"tls_cert": str(pki.server_cert), "tls_key": str(pki.server_key)}
    with daemon_thread(**tls) as address:
        port = address.rsplit(":", 1)[1]
        target = f"localhost:{port}"
        soon = doctor("--server", target, "--tls", "--ca-cert", str(pki.ca_cert))
        # The test CA's certificates live two days: fine when warned only a day ahead.
        later = doctor(
            "--server", target, "--tls", "--ca-cert", str(pki.ca_cert), "--cert-warn-days", "1"
        )
        other = doctor("--server", target, "--tls", "--ca-cert", str(pki.other_ca_cert))
    status, detail, fix = soon["tls"]
    assert status is Status.WARN
    assert f"verified against --ca-cert {pki.ca_cert}" in detail
    assert "valid for localhost, 127.0.0.1;" in detail
    assert "days left" in detail
    assert "renew" in fix
    assert soon["daemon"][0] is Status.OK
    assert soon["auth"][0] is Status.OK

    assert later["tls"][0] is Status.OK
    assert later["tls"][1].endswith("(2 days left)")

    status, detail, fix = other["tls"]
    assert status is Status.FAIL
    assert "does not verify" in detail
    assert fix.startswith("pass --ca-cert with the CA that signed")
    assert other["daemon"][0] is Status.FAIL
    assert other["daemon"][2].endswith("see the tls check")


def test_a_certificate_for_another_name_fails_the_hostname_check(tmp_path: Path) -> None:
    ca = CertificateAuthority("ca")
    cert, key = ca.issue("elsewhere", hosts=("elsewhere.example",)).write(tmp_path, "server")
    with daemon_thread(tls_cert=str(cert), tls_key=str(key)) as address:
        found = doctor("--server", address, "--tls", "--ca-cert", str(ca.write(tmp_path)))
    status, detail, fix = found["tls"]
    assert status is Status.FAIL
    assert "is not valid for this name" in detail
    assert "subjectAltName" in fix


def test_mtls_needs_the_client_certificate_for_the_handshake(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    tokens = tmp_path / "clients.toml"
    tokens.write_text('[[client]]\ncn = "test-client"\nrole = "admin"\n')
    config: dict[str, Any] = {
        "tls_cert": str(pki.server_cert),
        "tls_key": str(pki.server_key),
        "client_ca": str(pki.ca_cert),
        "tokens_file": str(tokens),
    }
    with daemon_thread(**config) as address:
        base = ("--server", address, "--tls", "--ca-cert", str(pki.ca_cert))
        without = doctor(*base)
        client = ("--client-cert", str(pki.client_cert), "--client-key", str(pki.client_key))
        with_cert = doctor(*base, *client)
    assert without["tls"][0] is Status.FAIL
    assert "--client-cert" in without["tls"][2]
    assert with_cert["tls"][0] is Status.WARN  # expiring soon, as all test certificates
    assert with_cert["auth"][:2] == (
        Status.OK,
        f"client certificate {pki.client_cert} accepted (admin role)",
    )
