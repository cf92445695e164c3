"""Credentials and transports: bearer tokens from a file, TLS, mTLS, Unix sockets.

Each transport is exercised against a real grpc.aio server; what the server
receives (the authorization header, the verified client certificate) is read
from the server's side of the call.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from holodesk.client.channel import ChannelError, ChannelSettings, check_settings
from holodesk.client.cli import main
from holodesk.client.credentials import (
    TOKEN_FILE_ENV,
    BearerToken,
    CredentialsError,
    read_token_file,
    token_file_from_env,
)
from holodesk.client.events import Outcome
from holodesk.client.exit_codes import ExitCode
from holodesk.client.safety import SafetySettings
from holodesk.client.session import SessionOptions, run_session
from holodesk.platform.backends import fake
from holodesk.proto.v1 import agent_pb2
from tests.support.certs import CLIENT_CN, Pki, make_pki

from .scripted import Conversation, Script, ScriptedDaemon, done

Daemon = Callable[[Script], ScriptedDaemon]
SECRET = "hd-7Qx2-very-secret-token"
QUIET = SafetySettings(emergency_stop=None)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(f"  {SECRET}\n")
    path.chmod(0o600)
    return path


async def _finish(conv: Conversation) -> None:
    await conv.open()
    await conv.send_actions(1, done("d", "ok"))
    await conv.recv_observation()
    await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")


def _tls_server(pki: Pki, *, require_client_cert: bool = False) -> grpc.ServerCredentials:
    return grpc.ssl_server_credentials(
        [(pki.server_key.read_bytes(), pki.server_cert.read_bytes())],
        root_certificates=pki.ca_cert.read_bytes() if require_client_cert else None,
        require_client_auth=require_client_cert,
    )


@pytest.fixture
def tls_daemon(pki: Pki) -> Iterator[Callable[..., ScriptedDaemon]]:
    started: list[ScriptedDaemon] = []

    def start(script: Script, *, require_client_cert: bool = False) -> ScriptedDaemon:
        server = ScriptedDaemon(
            script, credentials=_tls_server(pki, require_client_cert=require_client_cert)
        )
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


# -- the token file ---------------------------------------------------------------------


def test_token_file_is_read_trimmed_and_never_shown(token_file: Path) -> None:
    token = read_token_file(token_file)
    assert token.value == SECRET
    assert token.header == ("authorization", f"Bearer {SECRET}")
    for text in (repr(token), str(token), f"{token}", repr(ChannelSettings(token=token))):
        assert SECRET not in text
    assert str(token_file) in repr(token)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b"   \n", "is empty"),
        (b"two words", "no spaces or line breaks"),
        (b"line1\nline2", "no spaces or line breaks"),
        ("t\u00f6ken".encode(), "non-ASCII"),
        (b"x" * 5000, "not a token"),
    ],
)
def test_bad_token_files_are_refused_without_echoing_them(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "token"
    path.write_bytes(content)
    with pytest.raises(CredentialsError) as error:
        read_token_file(path)
    assert message in str(error.value)
    assert str(path) in str(error.value)
    if content.strip():
        assert content.decode(errors="replace")[:5] not in str(error.value)


def test_missing_and_directory_token_files(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError, match="does not exist"):
        read_token_file(tmp_path / "nope")
    with pytest.raises(CredentialsError, match="is a directory"):
        read_token_file(tmp_path)


def test_token_file_from_the_environment(tmp_path: Path) -> None:
    assert token_file_from_env({TOKEN_FILE_ENV: str(tmp_path / "t")}) == tmp_path / "t"
    assert token_file_from_env({TOKEN_FILE_ENV: " "}) is None
    assert token_file_from_env({}) is None


# -- what can and cannot be combined ----------------------------------------------------


def test_a_token_is_never_sent_in_plaintext_off_the_machine() -> None:
    token = BearerToken(SECRET, "test")
    with pytest.raises(ChannelError, match="refusing to send the token in plaintext") as error:
        check_settings("10.1.2.3:50051", ChannelSettings(insecure=True, token=token))
    assert SECRET not in str(error.value)
    # On this machine (loopback, Unix socket) plaintext is fine: nothing crosses a network.
    assert check_settings("127.0.0.1:1", ChannelSettings(token=token)) is True
    assert check_settings("unix:/run/h.sock", ChannelSettings(token=token)) is True
    assert check_settings("gpu:443", ChannelSettings(token=token)) is False


def test_mtls_needs_both_halves_and_tls(tmp_path: Path) -> None:
    cert = tmp_path / "c.pem"
    cert.write_text("x")
    with pytest.raises(ChannelError, match="both a client certificate and its private key"):
        check_settings("gpu:443", ChannelSettings(client_cert=cert))
    with pytest.raises(ChannelError, match="needs TLS"):
        check_settings(
            "127.0.0.1:1", ChannelSettings(insecure=True, client_cert=cert, client_key=cert)
        )
    with pytest.raises(ChannelError, match="cannot read the CA certificate"):
        check_settings("gpu:443", ChannelSettings(ca_cert=tmp_path / "missing.pem"))


# -- real transports --------------------------------------------------------------------


async def test_bearer_token_over_a_unix_socket(token_file: Path) -> None:
    """Proves: on a plaintext local transport (gRPC refuses call credentials on
    insecure channels; local channel credentials carry them) the daemon still
    receives `authorization: Bearer <token>`."""
    with tempfile.TemporaryDirectory(prefix="hd-") as directory:
        target = f"unix:{directory}/daemon.sock"
        server = ScriptedDaemon(_finish, address=target)
        try:
            settings = ChannelSettings(token=read_token_file(token_file))
            options = SessionOptions(channel=settings, safety=QUIET)
            outcome = await run_session(target, "t", fake.create(), options)
        finally:
            server.stop()
    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert server.conversation.metadata["authorization"] == f"Bearer {SECRET}"


async def test_bearer_token_over_loopback_tcp(daemon: Daemon, token_file: Path) -> None:
    server = daemon(_finish)
    settings = ChannelSettings(token=read_token_file(token_file))
    outcome = await run_session(
        server.target, "t", fake.create(), SessionOptions(channel=settings, safety=QUIET)
    )
    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert server.conversation.metadata["authorization"] == f"Bearer {SECRET}"


async def test_no_token_sends_no_authorization(daemon: Daemon) -> None:
    server = daemon(_finish)
    outcome = await run_session(server.target, "t", fake.create(), SessionOptions(safety=QUIET))
    assert outcome.outcome is Outcome.SUCCEEDED
    assert "authorization" not in server.conversation.metadata


async def test_tls_with_a_token_as_call_credentials(
    tls_daemon: Callable[..., ScriptedDaemon], pki: Pki, token_file: Path
) -> None:
    server = tls_daemon(_finish)
    settings = ChannelSettings(
        insecure=False, ca_cert=pki.ca_cert, token=read_token_file(token_file)
    )
    outcome = await run_session(
        server.target, "t", fake.create(), SessionOptions(channel=settings, safety=QUIET)
    )
    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert server.conversation.metadata["authorization"] == f"Bearer {SECRET}"
    assert server.conversation.auth_context["transport_security_type"] == [b"ssl"]


async def test_tls_refuses_a_daemon_signed_by_another_ca(
    tls_daemon: Callable[..., ScriptedDaemon], pki: Pki, token_file: Path
) -> None:
    """Proves: the daemon's certificate is verified; the token is not handed to an
    impostor (the handshake fails before any call is made)."""
    server = tls_daemon(_finish)
    settings = ChannelSettings(
        insecure=False, ca_cert=pki.other_ca_cert, token=read_token_file(token_file)
    )
    outcome = await run_session(
        server.target, "t", fake.create(), SessionOptions(channel=settings, safety=QUIET)
    )
    assert outcome.outcome is Outcome.ERROR
    assert outcome.status_code == "UNAVAILABLE"
    assert server.agent.conversations == []
    assert SECRET not in outcome.reason


async def test_mtls_presents_the_client_certificate(
    tls_daemon: Callable[..., ScriptedDaemon], pki: Pki
) -> None:
    server = tls_daemon(_finish, require_client_cert=True)
    settings = ChannelSettings(
        insecure=False,
        ca_cert=pki.ca_cert,
        client_cert=pki.client_cert,
        client_key=pki.client_key,
    )
    outcome = await run_session(
        server.target, "t", fake.create(), SessionOptions(channel=settings, safety=QUIET)
    )
    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert server.conversation.auth_context["x509_common_name"] == [CLIENT_CN.encode()]


async def test_mtls_daemon_refuses_a_client_without_a_certificate(
    tls_daemon: Callable[..., ScriptedDaemon], pki: Pki
) -> None:
    server = tls_daemon(_finish, require_client_cert=True)
    settings = ChannelSettings(insecure=False, ca_cert=pki.ca_cert)
    outcome = await run_session(
        server.target, "t", fake.create(), SessionOptions(channel=settings, safety=QUIET)
    )
    assert outcome.outcome is Outcome.ERROR
    assert outcome.status_code == "UNAVAILABLE"
    assert server.agent.conversations == []


# -- the command line -------------------------------------------------------------------


def test_cli_sends_the_token_and_never_prints_it(
    daemon: Daemon, token_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def script(conv: Conversation) -> None:
        await conv.recv()
        await conv.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown bearer token")

    server = daemon(script)
    code = main(
        [
            "run",
            "--server",
            server.target,
            "--backend",
            "fake",
            "--no-estop",
            "--token-file",
            str(token_file),
            "t",
        ]
    )
    out, err = capsys.readouterr()
    assert code == ExitCode.DAEMON_ERROR
    assert "UNAUTHENTICATED: unknown bearer token" in err
    assert SECRET not in out + err
    assert server.conversation.metadata["authorization"] == f"Bearer {SECRET}"


def test_cli_reads_the_token_file_from_the_environment(
    daemon: Daemon,
    token_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(TOKEN_FILE_ENV, str(token_file))
    server = daemon(_finish)
    code = main(["run", "--server", server.target, "--backend", "fake", "--no-estop", "t"])
    assert code == ExitCode.SUCCEEDED, capsys.readouterr().err
    assert server.conversation.metadata["authorization"] == f"Bearer {SECRET}"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--token-file", "/nonexistent/token"], "token file /nonexistent/token does not exist"),
        (["--server", "10.0.0.9:50051", "--insecure"], "refusing to send the token in plaintext"),
        (["--client-cert", "/nonexistent.pem"], "--client-cert /nonexistent.pem: no such file"),
    ],
)
def test_cli_credential_mistakes_are_usage_errors(
    token_file: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--server", "127.0.0.1:1", "--backend", "fake", "--token-file", str(token_file)]
    assert main([*argv, *extra, "t"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert message in err
    assert SECRET not in err
