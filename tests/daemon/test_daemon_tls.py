"""Transport security against a real daemon: TLS, mTLS with certificates made on the
spot by a throwaway CA, the non-loopback refusal, and the Unix socket's permissions."""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from holodesk.daemon.config import ServerConfig
from holodesk.daemon.rpc.server import serve
from holodesk.proto.v1 import control_pb2, control_pb2_grpc
from tests.daemon.support import (
    GUARD_S,
    HOLODESKD,
    Stream,
    running_daemon,
    scripted_policy,
    write_tokens,
)
from tests.support.certs import CertificateAuthority, Issued


@dataclass(frozen=True)
class Pki:
    ca: CertificateAuthority
    cert: Path
    key: Path
    ca_file: Path


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority("holodesk test CA")


@pytest.fixture
def pki(ca: CertificateAuthority, tmp_path: Path) -> Pki:
    cert, key = ca.issue("localhost", hosts=("localhost", "127.0.0.1")).write(tmp_path, "server")
    return Pki(ca, cert, key, ca.write(tmp_path))


def tls_channel(address: str, ca_pem: bytes, client: Issued | None = None) -> grpc.aio.Channel:
    credentials = grpc.ssl_channel_credentials(
        root_certificates=ca_pem,
        private_key=client.key_pem if client else None,
        certificate_chain=client.cert_pem if client else None,
    )
    _, port = address.rsplit(":", 1)
    return grpc.aio.secure_channel(
        f"127.0.0.1:{port}", credentials, options=[("grpc.ssl_target_name_override", "localhost")]
    )


async def list_sessions(
    channel: grpc.aio.Channel, metadata: list[tuple[str, str]] | None = None
) -> grpc.StatusCode:
    stub = control_pb2_grpc.ControlServiceStub(channel)
    try:
        await stub.ListSessions(
            control_pb2.ListSessionsRequest(), metadata=metadata, timeout=GUARD_S
        )
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


async def test_tls_with_tokens_serves_encrypted_callers_only(pki: Pki, tmp_path: Path) -> None:
    """With --tls-cert/--tls-key, a client trusting the CA gets in with its token; a
    plaintext client cannot even speak to the port."""
    tokens = write_tokens(tmp_path, ops="admin")
    async with running_daemon(
        [scripted_policy([])],
        tls_cert=str(pki.cert),
        tls_key=str(pki.key),
        tokens_file=str(tokens.path),
    ) as daemon:
        address = daemon.running.address
        async with tls_channel(address, pki.ca.cert_pem) as channel:
            assert await list_sessions(channel, tokens.metadata("ops")) == grpc.StatusCode.OK
            assert await list_sessions(channel) == grpc.StatusCode.UNAUTHENTICATED
        async with grpc.aio.insecure_channel(address) as plain:
            assert await list_sessions(plain, tokens.metadata("ops")) == grpc.StatusCode.UNAVAILABLE


async def test_mtls_maps_certificate_names_to_roles_and_refuses_strangers(
    pki: Pki, tmp_path: Path
) -> None:
    """--client-ca: a certificate from that CA is the principal cn:<CN> with its
    [[client]] role; an unmapped CN is UNAUTHENTICATED; a certificate from another CA,
    or none, fails the handshake (UNAVAILABLE); the daemon serves on regardless."""
    tokens = write_tokens(tmp_path, clients={"tray": "admin", "runner": "agent"})
    other_ca = CertificateAuthority("someone else's CA")
    async with running_daemon(
        [scripted_policy([])],
        tls_cert=str(pki.cert),
        tls_key=str(pki.key),
        client_ca=str(pki.ca_file),
        tokens_file=str(tokens.path),
    ) as daemon:
        address, ca_pem = daemon.running.address, pki.ca.cert_pem
        cases = [
            (pki.ca.issue("tray"), grpc.StatusCode.OK),
            (pki.ca.issue("runner"), grpc.StatusCode.PERMISSION_DENIED),
            (pki.ca.issue("stranger"), grpc.StatusCode.UNAUTHENTICATED),
            (other_ca.issue("tray"), grpc.StatusCode.UNAVAILABLE),
            (None, grpc.StatusCode.UNAVAILABLE),
        ]
        for client, expected in cases:
            async with tls_channel(address, ca_pem, client) as channel:
                assert await list_sessions(channel) == expected, client

        # An agent certificate runs sessions; and the good caller still gets in after
        # all the failed handshakes.
        async with tls_channel(address, ca_pem, pki.ca.issue("runner")) as channel:
            started = await Stream(channel).start()
            assert started.session_id
        async with tls_channel(address, ca_pem, pki.ca.issue("tray")) as channel:
            assert await list_sessions(channel) == grpc.StatusCode.OK


@pytest.mark.parametrize(
    ("settings", "missing"),
    [
        ({}, ("--tls-cert", "--tokens-file", "--insecure")),
        ({"tls_cert": "c.pem", "tls_key": "k.pem"}, ("--tokens-file", "--insecure")),
        ({"tokens_file": "t.toml"}, ("--tls-cert", "--insecure")),
    ],
)
def test_a_non_loopback_address_needs_tls_and_credentials(
    settings: dict[str, str], missing: tuple[str, ...]
) -> None:
    """0.0.0.0 without TLS and a credential is refused, naming exactly what is missing
    and the explicit way out; loopback and --insecure are accepted."""
    with pytest.raises(ValueError, match=r"refusing to listen on 0\.0\.0\.0") as refused:
        ServerConfig(listen="0.0.0.0:50051", **settings)  # type: ignore[arg-type]
    for flag in missing:
        assert flag in str(refused.value)
    ServerConfig(listen="0.0.0.0:50051", insecure=True)
    ServerConfig(listen="[::1]:50051")
    ServerConfig(listen="localhost:50051")


async def test_holodeskd_refuses_a_public_address_and_says_which_flags(tmp_path: Path) -> None:
    """The real executable exits 2 before binding anything, with the reason."""
    process = await asyncio.create_subprocess_exec(
        str(HOLODESKD),
        *("--listen", "0.0.0.0:0", "--policy", "scripted", "--script", str(tmp_path / "s")),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), GUARD_S)
    assert process.returncode == 2
    text = stderr.decode()
    assert "refusing to listen on 0.0.0.0" in text
    assert "--tls-cert" in text
    assert "--insecure" in text


async def test_all_interfaces_with_tls_and_tokens_are_allowed(pki: Pki, tmp_path: Path) -> None:
    """With TLS and a tokens file the daemon binds 0.0.0.0 and serves (reached over
    loopback here)."""
    tokens = write_tokens(tmp_path, ops="admin")
    config = ServerConfig(
        listen="0.0.0.0:0",
        tls_cert=str(pki.cert),
        tls_key=str(pki.key),
        tokens_file=str(tokens.path),
    )
    async with (
        serve(config, policies=[scripted_policy([])]) as running,
        tls_channel(f"127.0.0.1:{running.port}", pki.ca.cert_pem) as channel,
    ):
        assert await list_sessions(channel, tokens.metadata("ops")) == grpc.StatusCode.OK


def test_bad_tls_files_are_explained(pki: Pki, tmp_path: Path) -> None:
    """A certificate that does not match its key, or a missing file, is a clear error at
    startup, not a handshake failure later."""
    wrong_key = tmp_path / "wrong.key"
    wrong_key.write_bytes(pki.ca.issue("x").key_pem)

    async def start(cert: Path, key: Path) -> None:
        config = ServerConfig(listen="127.0.0.1:0", tls_cert=str(cert), tls_key=str(key))
        async with serve(config, [scripted_policy([])]):
            pass  # pragma: no cover

    for cert, key in ((pki.cert, wrong_key), (tmp_path / "nope.crt", pki.key)):
        with pytest.raises(ValueError, match="TLS files unusable"):
            asyncio.run(start(cert, key))
    with pytest.raises(ValueError, match="--client-ca needs --tokens-file"):
        ServerConfig(tls_cert="c", tls_key="k", client_ca="ca")
    with pytest.raises(ValueError, match="go together"):
        ServerConfig(tls_cert="c")


# Unix-domain sockets -----------------------------------------------------------------


async def test_the_unix_socket_is_private_and_its_callers_are_admin(tmp_path: Path) -> None:
    """unix:PATH is created 0600; callers on it are admin without a token while it stays
    private; widened to 0660 its callers need a token (the documented rule)."""
    path = tmp_path / "holodeskd.sock"
    tokens = write_tokens(tmp_path, ops="admin")
    config = ServerConfig(listen=f"unix:{path}", tokens_file=str(tokens.path))
    async with serve(config, policies=[scripted_policy([])]) as running:
        assert running.address == f"unix:{path}"
        assert path.stat().st_mode & 0o777 == 0o600
        async with grpc.aio.insecure_channel(running.address) as channel:
            assert await list_sessions(channel) == grpc.StatusCode.OK
            path.chmod(0o660)
            assert await list_sessions(channel) == grpc.StatusCode.UNAUTHENTICATED
            assert await list_sessions(channel, tokens.metadata("ops")) == grpc.StatusCode.OK
    assert not path.exists()  # removed on stop


async def test_a_live_unix_socket_is_never_taken_over_but_a_stale_one_is(tmp_path: Path) -> None:
    """gRPC would silently unlink another daemon's socket; holodeskd refuses instead,
    and replaces a socket file left by a process that is gone."""
    path = tmp_path / "holodeskd.sock"
    config = ServerConfig(listen=f"unix:{path}")
    async with serve(config, policies=[scripted_policy([])]):
        with pytest.raises(OSError, match="another process is listening"):
            async with serve(config, policies=[scripted_policy([])]):
                pass  # pragma: no cover
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))
    stale.close()
    async with (
        serve(config, policies=[scripted_policy([])]) as running,
        grpc.aio.insecure_channel(running.address) as channel,
    ):
        assert await list_sessions(channel) == grpc.StatusCode.OK


def test_unix_listen_addresses_parse() -> None:
    """unix:PATH (absolute, relative, or unix:///abs) and refusals of what has no
    file permissions to guard it."""
    assert ServerConfig(listen="unix:///run/h.sock").address.unix_path == "/run/h.sock"
    assert ServerConfig(listen="unix:/run/h.sock").address.unix_path == "/run/h.sock"
    relative = ServerConfig(listen="unix:h.sock").address.unix_path
    assert relative == os.path.join(os.getcwd(), "h.sock")
    for bad, reason in (("unix:", "needs a socket file path"), ("unix-abstract:h", "abstract")):
        with pytest.raises(ValueError, match=reason):
            ServerConfig(listen=bad)
