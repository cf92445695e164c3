"""Bearer tokens and roles against a real daemon: who gets in, who gets which status,
and that no credential ever reaches a log line."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from holodesk.daemon.logredact import REDACTED, RedactingFilter, redact
from holodesk.daemon.principals import Role
from holodesk.daemon.rpc.auth import DENIAL_AWAITS_FIRST_REQUEST_S
from holodesk.daemon.rpc.credentials import (
    CredentialsError,
    load_credentials,
    new_token,
    token_digest,
)
from holodesk.proto.v1 import agent_pb2, control_pb2, control_pb2_grpc
from tests.daemon.support import (
    GUARD_S,
    HOLODESKD,
    Daemon,
    Stream,
    bearer,
    holo,
    make_frame,
    rich_status,
    running_daemon,
    scripted_policy,
    spawn_holodeskd,
    write_tokens,
)

CLICK = holo({"action": "click", "x": 500, "y": 500})


async def _list_sessions(daemon: Daemon, metadata: list[tuple[str, str]] | None) -> None:
    await daemon.control.ListSessions(control_pb2.ListSessionsRequest(), metadata=metadata)


async def _locate(daemon: Daemon, metadata: list[tuple[str, str]] | None) -> None:
    request = agent_pb2.LocateRequest(frame=make_frame("l", 64, 48), descriptions=["box"])
    await daemon.agent.Locate(request, metadata=metadata)


async def _status_of(call: Awaitable[None]) -> grpc.StatusCode:
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


@pytest.mark.parametrize("caller", ["none", "wrong", "malformed", "agent", "admin"])
async def test_every_kind_of_caller_gets_the_status_its_credential_deserves(
    tmp_path: Path, caller: str
) -> None:
    """Unary and streaming RPCs alike: no credential or an unknown one is
    UNAUTHENTICATED, an agent token on ControlService is PERMISSION_DENIED, and
    admin may call everything."""
    tokens = write_tokens(tmp_path, bot="agent", ops="admin")
    metadata = {
        "none": None,
        "wrong": bearer(new_token()),
        "malformed": [("authorization", "Basic dXNlcjpwYXNz")],
        "agent": tokens.metadata("bot"),
        "admin": tokens.metadata("ops"),
    }[caller]
    expected = {
        "none": (grpc.StatusCode.UNAUTHENTICATED,) * 3,
        "wrong": (grpc.StatusCode.UNAUTHENTICATED,) * 3,
        "malformed": (grpc.StatusCode.UNAUTHENTICATED,) * 3,
        # ControlService, Locate, RunSession
        "agent": (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.OK, grpc.StatusCode.OK),
        "admin": (grpc.StatusCode.OK,) * 3,
    }[caller]
    policy = scripted_policy([CLICK, CLICK])
    async with running_daemon([policy], tokens_file=str(tokens.path)) as daemon:
        got = (
            await _status_of(_list_sessions(daemon, metadata)),
            await _status_of(_locate(daemon, metadata)),
            await _stream_status(daemon, metadata),
        )
        assert got == expected


async def _stream_status(
    daemon: Daemon, metadata: list[tuple[str, str]] | None, stream: Stream | None = None
) -> grpc.StatusCode:
    stream = stream or Stream(daemon.channel, metadata=metadata)
    try:
        await stream.send(agent_pb2.RunSessionRequest(start=agent_pb2.SessionStart(task="t")))
        first = await asyncio.wait_for(stream.call.read(), GUARD_S)
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    assert first.WhichOneof("event") == "started"
    stream.call.cancel()
    return grpc.StatusCode.OK


async def test_a_denied_stream_whose_first_write_comes_late_still_hears_unauthenticated(
    tmp_path: Path,
) -> None:
    """The denial waits for the caller's first message: a client still writing it
    when the status came would report INTERNAL (grpc/grpc#36066), not the status.
    The pause lets the daemon decide before the write is sent, which on a loaded
    run happens by chance; without the wait nearly every round fails."""
    tokens = write_tokens(tmp_path, bot="agent")
    async with running_daemon([scripted_policy([])], tokens_file=str(tokens.path)) as daemon:
        for _ in range(20):
            stream = Stream(daemon.channel)
            await asyncio.sleep(0.02)
            assert await _stream_status(daemon, None, stream) == grpc.StatusCode.UNAUTHENTICATED


async def test_a_denied_stream_that_never_writes_is_denied_within_the_bound(
    tmp_path: Path,
) -> None:
    tokens = write_tokens(tmp_path, bot="agent")
    async with running_daemon([scripted_policy([])], tokens_file=str(tokens.path)) as daemon:
        silent = Stream(daemon.channel)
        with pytest.raises(grpc.aio.AioRpcError) as silent_denial:
            await asyncio.wait_for(silent.call.read(), DENIAL_AWAITS_FIRST_REQUEST_S + GUARD_S)
        assert silent_denial.value.code() == grpc.StatusCode.UNAUTHENTICATED
        closed = Stream(daemon.channel)
        await closed.call.done_writing()
        with pytest.raises(grpc.aio.AioRpcError) as closed_denial:
            await asyncio.wait_for(closed.call.read(), GUARD_S)
        assert closed_denial.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_denials_carry_error_info_and_the_permission_names_the_role(tmp_path: Path) -> None:
    """PERMISSION_DENIED says who the caller is and which role the method needs."""
    tokens = write_tokens(tmp_path, bot="agent")
    async with running_daemon([scripted_policy([])], tokens_file=str(tokens.path)) as daemon:
        with pytest.raises(grpc.aio.AioRpcError) as denied:
            await _list_sessions(daemon, tokens.metadata("bot"))
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "token:bot has role agent" in (denied.value.details() or "")
        from google.rpc import error_details_pb2

        info = error_details_pb2.ErrorInfo()
        assert rich_status(denied.value).details[0].Unpack(info)
        assert info.metadata["required_role"] == "admin"


async def test_list_sessions_names_the_principal_that_runs_each_session(
    tmp_path: Path,
) -> None:
    """SessionInfo.principal is the caller that started the session (token:<name>), so
    an operator sees who drives each desktop."""
    tokens = write_tokens(tmp_path, bot="agent", ops="admin")
    async with running_daemon([scripted_policy([CLICK])], tokens_file=str(tokens.path)) as daemon:
        mine = Stream(daemon.channel, metadata=tokens.metadata("bot"))
        started = await mine.start()
        listed = await daemon.control.ListSessions(
            control_pb2.ListSessionsRequest(), metadata=tokens.metadata("ops")
        )
        (info,) = listed.sessions
        assert (info.session_id, info.principal) == (started.session_id, "token:bot")
        mine.call.cancel()


async def test_health_and_reflection_stay_open(tmp_path: Path) -> None:
    """Load balancers and grpcurl need no credential (documented)."""
    tokens = write_tokens(tmp_path, bot="agent")
    async with running_daemon([scripted_policy([])], tokens_file=str(tokens.path)) as daemon:
        health = health_pb2_grpc.HealthStub(daemon.channel)
        reply = await health.Check(health_pb2.HealthCheckRequest(service=""))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        reflect = reflection_pb2_grpc.ServerReflectionStub(daemon.channel).ServerReflectionInfo()
        await reflect.write(reflection_pb2.ServerReflectionRequest(list_services=""))
        listed = await asyncio.wait_for(reflect.read(), GUARD_S)
        assert listed.list_services_response.service
        await reflect.done_writing()
        v1 = daemon.channel.stream_stream(
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )()
        await v1.write(reflection_pb2.ServerReflectionRequest(list_services=""))
        listed = await asyncio.wait_for(v1.read(), GUARD_S)
        assert listed.list_services_response.service
        await v1.done_writing()


async def test_a_failed_auth_is_logged_without_the_token(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The denial is logged by cause; the presented token appears nowhere in the logs."""
    tokens = write_tokens(tmp_path, bot="agent")
    presented = new_token()
    caplog.set_level(logging.DEBUG)
    async with running_daemon([scripted_policy([])], tokens_file=str(tokens.path)) as daemon:
        with pytest.raises(grpc.aio.AioRpcError):
            await _locate(daemon, bearer(presented))
        with pytest.raises(grpc.aio.AioRpcError):
            await _list_sessions(daemon, tokens.metadata("bot"))
    denials = [r.getMessage() for r in caplog.records if "denied" in r.getMessage()]
    assert any("unknown bearer token" in line for line in denials), denials
    assert any("PERMISSION" not in line and "needs admin" in line for line in denials)
    everything = "\n".join(r.getMessage() for r in caplog.records)
    assert presented not in everything
    assert tokens.by_name["bot"] not in everything


async def test_the_real_daemon_never_prints_a_presented_token(tmp_path: Path) -> None:
    """holodeskd at DEBUG, called with a wrong token and an agent token on an admin
    method: its whole stderr holds neither token."""
    tokens = write_tokens(tmp_path, bot="agent")
    script = tmp_path / "script.json"
    script.write_text("[]")
    wrong = new_token()
    process, address = await spawn_holodeskd(
        *("--policy", "scripted", "--script", str(script)),
        *("--tokens-file", str(tokens.path), "--log-level", "DEBUG"),
    )
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            control = control_pb2_grpc.ControlServiceStub(channel)
            for metadata in (bearer(wrong), tokens.metadata("bot")):
                with pytest.raises(grpc.aio.AioRpcError):
                    await control.ListSessions(control_pb2.ListSessionsRequest(), metadata=metadata)
        process.terminate()
        _, stderr_bytes = await asyncio.wait_for(process.communicate(), GUARD_S)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    stderr = stderr_bytes.decode()
    assert "unknown bearer token" in stderr
    assert wrong not in stderr
    assert tokens.by_name["bot"] not in stderr


def test_the_log_filter_redacts_bearer_values_and_tokens_in_tracebacks() -> None:
    """Second line of defence: whatever prints a credential, the handler's output doesn't."""
    token = new_token()
    assert redact(f"metadata (('authorization', 'Bearer {token}'),)") == (
        f"metadata (('authorization', 'Bearer {REDACTED}'),)"
    )
    assert token not in redact(f"token={token}")
    record = logging.LogRecord(
        "x", logging.ERROR, __file__, 1, "got %s", (f"Bearer {token}",), None
    )
    try:
        raise ValueError(f"bad {token}")
    except ValueError:
        record.exc_info = sys.exc_info()
    assert RedactingFilter().filter(record)
    assert token not in record.getMessage()
    assert record.exc_text is not None
    assert token not in record.exc_text
    assert "ValueError" in record.exc_text


def test_token_files_store_digests_and_bad_files_are_explained(tmp_path: Path) -> None:
    """Only digests are stored; every mistake in the file names the file and the entry."""
    tokens = write_tokens(tmp_path, bot="agent")
    text = tokens.path.read_text()
    assert tokens.by_name["bot"] not in text
    assert token_digest(tokens.by_name["bot"]).hex() in text
    loaded = load_credentials(tokens.path)
    entry = loaded.match_token(tokens.by_name["bot"])
    assert entry is not None
    assert entry.role is Role.AGENT
    assert loaded.match_token(new_token()) is None

    digest = "0" * 64
    bad = {
        "token = 1\n": "array of tables",
        f'[[token]]\nname = "a"\nrole = "root"\nsha256 = "{digest}"\n': "role 'root'",
        '[[token]]\nname = "a"\nrole = "agent"\nsha256 = "hdk_plaintext"\n': "64 hex digits",
        f'[[token]]\nname = "a"\nrole = "agent"\nsha256 = "{digest}"\nextra = 1\n': "unknown key",
        (
            f'[[token]]\nname = "a"\nrole = "agent"\nsha256 = "{digest}"\n'
            f'[[token]]\nname = "a"\nrole = "admin"\nsha256 = "{"1" * 64}"\n'
        ): "token name 'a' appears twice",
        '[[client]]\ncn = ""\nrole = "agent"\n': "cn must be a non-empty string",
        "[[token]\n": "not valid TOML",
    }
    for content, reason in bad.items():
        path = tmp_path / "bad.toml"
        path.write_text(content)
        with pytest.raises(CredentialsError) as error:
            load_credentials(path)
        assert reason in str(error.value)
        assert str(path) in str(error.value)


async def test_token_new_prints_a_token_the_daemon_then_accepts(tmp_path: Path) -> None:
    """`holodeskd token new --append FILE` prints only the token and appends its entry;
    the daemon started on that file lets the token in with its role."""
    path = tmp_path / "tokens.toml"
    made: dict[str, str] = {}
    for name, role in (("ops", "admin"), ("bot", "agent")):
        process = await asyncio.create_subprocess_exec(
            str(HOLODESKD),
            *("token", "new", "--name", name, "--role", role, "--append", str(path)),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), GUARD_S)
        assert process.returncode == 0, err
        made[name] = out.decode().strip()
        assert made[name].startswith("hdk_")
    assert path.stat().st_mode & 0o777 == 0o600
    assert all(token not in path.read_text() for token in made.values())

    duplicate = await asyncio.create_subprocess_exec(
        str(HOLODESKD),
        *("token", "new", "--name", "ops", "--role", "agent", "--append", str(path)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(duplicate.communicate(), GUARD_S)
    assert duplicate.returncode == 2
    assert "appears twice" in err.decode()

    async with running_daemon([scripted_policy([])], tokens_file=str(path)) as daemon:
        await _list_sessions(daemon, bearer(made["ops"]))
        with pytest.raises(grpc.aio.AioRpcError) as denied:
            await _list_sessions(daemon, bearer(made["bot"]))
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED


async def test_reloading_credentials_revokes_and_grants(tmp_path: Path) -> None:
    """SIGHUP's reload: a removed token stops working at once, a new one starts working."""
    old = write_tokens(tmp_path, ops="admin")
    async with running_daemon([scripted_policy([])], tokens_file=str(old.path)) as daemon:
        await _list_sessions(daemon, old.metadata("ops"))
        new = write_tokens(tmp_path, ops2="admin")  # same path, replaced
        daemon.running.reload_credentials()
        await _list_sessions(daemon, new.metadata("ops2"))
        with pytest.raises(grpc.aio.AioRpcError) as revoked:
            await _list_sessions(daemon, old.metadata("ops"))
        assert revoked.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_open_mode_on_loopback_lets_everyone_in_but_never_ignores_a_bad_token() -> None:
    """No credentials configured on loopback: every caller is admin, as before auth; a
    token the daemon does not know is still refused (a wrong credential is an error)."""
    async with running_daemon([scripted_policy([])]) as daemon:
        await _list_sessions(daemon, None)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await _list_sessions(daemon, bearer(new_token()))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
