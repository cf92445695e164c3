"""The real `holodeskd` executable: startup line, draining on SIGTERM, bad flags."""

from __future__ import annotations

import asyncio
import json
import signal
from importlib.metadata import version
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from holodesk.daemon.cli import build_parser, config_from_args
from tests.daemon.support import GUARD_S, HOLODESKD, Stream, holo, make_frame


async def _spawn(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        str(HOLODESKD),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _address(process: asyncio.subprocess.Process) -> str:
    assert process.stdout is not None
    line = (await asyncio.wait_for(process.stdout.readline(), GUARD_S)).decode()
    prefix = "holodeskd listening on "
    assert line.startswith(prefix), line
    return line[len(prefix) :].strip()


async def _wait_serving(channel: grpc.aio.Channel) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    watch = stub.Watch(health_pb2.HealthCheckRequest(service=""))
    while True:
        update = await asyncio.wait_for(watch.read(), GUARD_S)
        if update.status == health_pb2.HealthCheckResponse.SERVING:
            watch.cancel()
            return


async def test_sigterm_drains_and_exits_zero(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([holo({"action": "click", "x": 500, "y": 500})]))
    process = await _spawn(
        "--listen", "127.0.0.1:0", "--policy", "scripted", "--script", str(script)
    )
    try:
        address = await _address(process)
        host, port = address.rsplit(":", 1)
        assert host == "127.0.0.1"
        assert int(port) > 0
        async with grpc.aio.insecure_channel(address) as channel:
            await _wait_serving(channel)
            stream = Stream(channel)
            await stream.start()
            step = await stream.observe(make_frame("f1", 200, 100))
            assert step.actions.actions[0].click.point.x == 100.0

            process.send_signal(signal.SIGTERM)
            # The session waiting for its client is told to come back later.
            error = await stream.error()
            assert error.code() == grpc.StatusCode.UNAVAILABLE
            assert "shutting down" in (error.details() or "")
        code = await asyncio.wait_for(process.wait(), GUARD_S)
        assert process.stderr is not None
        stderr = (await process.stderr.read()).decode()
        assert code == 0, stderr
        assert "holodeskd stopped" in stderr
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_sigint_on_an_idle_daemon_exits_zero(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text("[]")
    process = await _spawn(
        "--listen", "127.0.0.1:0", "--policy", "scripted", "--script", str(script)
    )  # fmt: skip
    try:
        await _address(process)
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), GUARD_S) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_bad_configuration_exits_two_with_a_reason(tmp_path: Path) -> None:
    cases = [
        (["--policy", "nope"], "unknown policy 'nope'"),
        (
            ["--policy", "scripted", "--script", str(tmp_path / "missing.json")],
            "cannot read script",
        ),
        (["--listen", "nowhere"], "not HOST:PORT"),
        (
            ["--policy", "scripted", "--script", str(tmp_path / "x.json"), "--dialect", "klingon"],
            "unknown dialect",
        ),
    ]
    (tmp_path / "x.json").write_text("[]")
    for args, reason in cases:
        process = await _spawn(*args)
        _, stderr = await asyncio.wait_for(process.communicate(), GUARD_S)
        assert process.returncode == 2, (args, stderr)
        assert reason in stderr.decode(), (args, stderr)


def test_flags_become_the_config() -> None:
    args = build_parser().parse_args(
        [
            "--listen", "[::1]:0", "--policy", "scripted", "--script", "s.json",
            "--dialect", "holo1.5",
            "--policy-opt", "extra=1", "--max-message-mb", "8", "--max-steps", "7",
        ]
    )  # fmt: skip
    config = config_from_args(args)
    assert config.listen == "[::1]:0"
    assert config.policy == "scripted"
    assert dict(config.policy_options) == {"script": "s.json", "dialect": "holo1.5", "extra": "1"}
    assert config.max_message_bytes == 8 * 1024 * 1024
    assert config.max_frame_bytes == 8 * 1024 * 1024  # follows a lower message limit
    assert config.max_steps == 7


def test_security_and_limit_flags_become_the_config() -> None:
    args = build_parser().parse_args(
        [
            "--listen", "unix:/tmp/h.sock", "--tokens-file", "t.toml",
            "--max-frame-pixels", "1000", "--max-sessions", "5",
            "--max-sessions-per-principal", "2", "--max-session-s", "60",
            "--step-timeout-s", "9", "--resume-window-s", "0", "--keepalive-s", "5",
        ]
    )  # fmt: skip
    config = config_from_args(args)
    assert config.address.unix_path == "/tmp/h.sock"
    assert config.tokens_file == "t.toml"
    assert (config.max_frame_pixels, config.max_sessions, config.max_sessions_per_principal) == (
        1000,
        5,
        2,
    )
    assert (config.max_session_s, config.step_timeout_s, config.resume_window_s) == (60, 9, 0)
    assert (config.keepalive_s, config.keepalive_timeout_s) == (5, 5)


def test_version_names_the_installed_package(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"holodeskd {version('holodesk-daemon')}"


def test_help_documents_every_security_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    text = capsys.readouterr().out
    for flag in (
        "--tls-cert", "--tls-key", "--client-ca", "--tokens-file", "--insecure",
        "--max-frame-pixels", "--max-sessions-per-principal", "--max-session-s",
        "--step-timeout-s", "--resume-window-s", "unix:PATH", "[[token]]", "token new",
    ):  # fmt: skip
        assert flag in text, flag


def test_the_decoded_screen_budgets_become_the_config() -> None:
    args = build_parser().parse_args(["--decoded-screens-mb", "64", "--raw-screens-mb", "32"])
    config = config_from_args(args)
    assert (config.decoded_screen_bytes, config.raw_screen_bytes) == (64 << 20, 32 << 20)
    defaults = config_from_args(build_parser().parse_args([]))
    assert defaults.raw_screen_bytes == 96 << 20
