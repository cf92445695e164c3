"""holodeskd's config file, through the real executable: values from
$XDG_CONFIG_HOME/holodesk/daemon.toml (or --config, $HOLODESKD_CONFIG) take effect,
flags beat them, and a file that cannot be used stops the daemon with exit code 2
before it listens."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import grpc
import pytest

from holodesk.proto.v1 import control_pb2, control_pb2_grpc
from tests.daemon.support import GUARD_S, HOLODESKD

MIB = 1024 * 1024


def _env(config_home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HOLODESKD_CONFIG"}
    return {**env, "XDG_CONFIG_HOME": str(config_home), **extra}


def _write_default(config_home: Path, text: str) -> Path:
    path = config_home / "holodesk" / "daemon.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def _server_info(env: dict[str, str], *args: str) -> control_pb2.GetServerInfoResponse:
    """Start holodeskd with these flags, ask it GetServerInfo, stop it (exit 0)."""
    process = await asyncio.create_subprocess_exec(
        str(HOLODESKD),
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), GUARD_S)).decode()
        assert line.startswith("holodeskd listening on "), line
        address = line.rsplit(" ", 1)[-1].strip()
        async with grpc.aio.insecure_channel(address) as channel:
            stub = control_pb2_grpc.ControlServiceStub(channel)
            info: control_pb2.GetServerInfoResponse = await asyncio.wait_for(
                stub.GetServerInfo(control_pb2.GetServerInfoRequest(), wait_for_ready=True),
                GUARD_S,
            )
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), GUARD_S) == 0
        return info
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_the_default_file_sets_options_and_flags_beat_it(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text("[]")
    _write_default(
        tmp_path,
        f'listen = "127.0.0.1:0"\npolicy = "scripted"\nscript = "{script}"\n'
        "max-message-mb = 4\nno-frame-deltas = true\n",
    )
    env = _env(tmp_path)
    info = await _server_info(env)
    assert info.default_policy == "scripted"
    assert info.max_message_bytes == 4 * MIB
    # A flag beats the file; the file's other values still apply.
    info = await _server_info(env, "--max-message-mb", "6")
    assert info.max_message_bytes == 6 * MIB
    assert info.default_policy == "scripted"


async def test_config_flag_and_env_name_another_file(tmp_path: Path) -> None:
    _write_default(tmp_path, "max-message-mb = 4\n")  # not read when another is named
    other = tmp_path / "other.toml"
    other.write_text('listen = "127.0.0.1:0"\nmax-message-mb = 3\n')
    info = await _server_info(_env(tmp_path), "--config", str(other))
    assert info.max_message_bytes == 3 * MIB
    info = await _server_info(_env(tmp_path, HOLODESKD_CONFIG=str(other)))
    assert info.max_message_bytes == 3 * MIB


async def _fails(env: dict[str, str], *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        str(HOLODESKD),
        "--listen",
        "127.0.0.1:0",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), GUARD_S)
    assert process.returncode == 2, stderr
    assert b"listening" not in stdout  # nothing started
    return stderr.decode()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("max_sessions = 8\n", "line 1: max_sessions: unknown key 'max_sessions'"),
        (
            '\n# limits\nmax-sessions = "8"\n',
            'line 3: max-sessions: expected an integer, got a string ("8")',
        ),
        ("max-frame-mb = true\n", "line 1: max-frame-mb: expected a number, got a boolean"),
        ('record = "sometimes"\n', "line 1: record: 'sometimes' is not one of 'off', 'on'"),
        ("insecure = 1\n", "line 1: insecure: expected true or false, got an integer (1)"),
        ('policy-opt = "a=b"\n', "policy-opt: expected a list of a string, got a string"),
        ('[run]\nserver = "x"\n', "line 1: run: unknown table [run]"),
        ("listen = [\n", "not valid TOML"),
    ],
)
async def test_a_bad_file_names_the_file_line_key_and_type(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = _write_default(tmp_path, text)
    stderr = await _fails(_env(tmp_path))
    assert f"holodeskd: {path}: " in stderr
    assert expected in stderr


async def test_a_named_file_that_is_missing_is_an_error(tmp_path: Path) -> None:
    stderr = await _fails(_env(tmp_path), "--config", str(tmp_path / "nope.toml"))
    assert f"config file {tmp_path / 'nope.toml'} (from --config) does not exist" in stderr
    stderr = await _fails(_env(tmp_path, HOLODESKD_CONFIG=str(tmp_path / "gone.toml")))
    assert "(from $HOLODESKD_CONFIG) does not exist" in stderr


async def test_config_path_shows_the_file_and_effective_values(tmp_path: Path) -> None:
    path = _write_default(tmp_path, 'max-sessions = 8\ntokens-file = "/etc/t.toml"\n')
    process = await asyncio.create_subprocess_exec(
        str(HOLODESKD),
        "config",
        "path",
        env=_env(tmp_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), GUARD_S)
    assert process.returncode == 0, stderr
    text = stdout.decode()
    assert text.startswith(f"# holodeskd reads {path} (the default)")
    assert "max-sessions = 8  # from the file" in text
    assert 'tokens-file = "/etc/t.toml"  # from the file' in text
    assert 'listen = "127.0.0.1:50051"  # default' in text
    assert "# max-frame-mb: not set (default)" in text


async def test_help_lists_the_subcommands_roles_and_the_config_file(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        str(HOLODESKD),
        "--help",
        env=_env(tmp_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, _ = await asyncio.wait_for(process.communicate(), GUARD_S)
    assert process.returncode == 0
    text = stdout.decode()
    assert "holodeskd token new --name NAME --role agent|operator|trainer|admin" in text
    assert "holodeskd config path" in text
    for role in ("agent     AgentService", "operator  an agent's calls and ComputerService"):
        assert role in text
    assert "admin     everything: ControlService" in text
    assert str(tmp_path / "holodesk" / "daemon.toml") in text
    assert "--config PATH" in text
