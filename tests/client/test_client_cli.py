"""`holodesk run` exit codes, through main([...]) against a scripted daemon."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from importlib.metadata import version

import grpc
import pytest

from holodesk.client import connection_args
from holodesk.client.cli import main
from holodesk.client.exit_codes import ExitCode
from holodesk.daemon.config import DEFAULT_LISTEN
from holodesk.proto import defaults
from holodesk.proto.v1 import agent_pb2

from .scripted import Conversation, Script, ScriptedDaemon, click, done, type_text, wait

Daemon = Callable[[Script], ScriptedDaemon]


def _ends_with(outcome: agent_pb2.SessionOutcome.ValueType, text: str) -> Script:
    async def script(conv: Conversation) -> None:
        frame = await conv.open()
        await conv.send_actions(1, click("c", frame.frame_id, 10, 10), type_text("t", "hi"))
        await conv.recv_observation()
        if outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED:
            await conv.send_actions(2, done("d", text))
            await conv.recv_observation()
        await conv.end(outcome, answer=text, reason=text)

    return script


def _run(target: str, *extra: str) -> int:
    return main(["run", "--server", target, "--backend", "fake", *extra, "fill the form"])


def test_succeeded_prints_steps_and_the_answer(
    daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    server = daemon(_ends_with(agent_pb2.SESSION_OUTCOME_SUCCEEDED, "Thanks, Ada [ok]"))
    assert _run(server.target, "--max-steps", "5") == ExitCode.SUCCEEDED
    out, err = capsys.readouterr()
    assert out.strip() == "Thanks, Ada [ok]"  # the answer alone on stdout, markup untouched
    assert "session s-1" in err
    assert "click (10, 10) left" in err
    assert "type 'hi'" in err
    assert "succeeded after 2 step(s)" in err
    assert "\x1b[" not in err  # no escape codes when not a terminal
    assert server.conversation.received[0].start.task == "fill the form"
    assert server.conversation.received[0].start.max_steps == 5


def test_json_writes_one_object_per_event_and_nothing_else(
    daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    """For programs: every line of stdout is one JSON object, in the order things
    happened; the daemon's text is data (its escape sequences stay escaped)."""
    server = daemon(_ends_with(agent_pb2.SESSION_OUTCOME_SUCCEEDED, "done \x1b]52;c;eA==\x07"))
    assert _run(server.target, "--json", "--no-estop") == ExitCode.SUCCEEDED
    out, err = capsys.readouterr()
    assert "\x1b" not in out
    events = [json.loads(line) for line in out.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds == ["started", "step", "action", "action", "step", "action", "outcome"]
    assert events[0]["session_id"] == "s-1"
    click_event = events[2]
    assert (click_event["kind"], click_event["description"]) == ("Click", "click (10, 10) left")
    assert click_event["action"]["point"] == {"x": 10, "y": 10}
    assert click_event["result"]["status"] == "ok"
    assert events[3]["action"]["text"] == "hi"
    assert events[-1]["outcome"] == "succeeded"
    assert events[-1]["answer"] == "done \x1b]52;c;eA==\x07"
    assert err == ""


@pytest.mark.parametrize(
    ("outcome", "code", "word"),
    [
        (agent_pb2.SESSION_OUTCOME_FAILED, ExitCode.FAILED, "failed"),
        (agent_pb2.SESSION_OUTCOME_CANCELLED, ExitCode.CANCELLED, "cancelled"),
        (agent_pb2.SESSION_OUTCOME_STEP_LIMIT, ExitCode.STEP_LIMIT, "step_limit"),
        (agent_pb2.SESSION_OUTCOME_TIME_LIMIT, ExitCode.TIME_LIMIT, "time_limit"),
    ],
)
def test_exit_code_says_how_it_ended(
    daemon: Daemon,
    capsys: pytest.CaptureFixture[str],
    outcome: agent_pb2.SessionOutcome.ValueType,
    code: ExitCode,
    word: str,
) -> None:
    """Each ending has its own exit code, and the rendered last line names it."""
    assert _run(daemon(_ends_with(outcome, "the reason")).target) == code
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{word} after " in err
    assert "the reason" in err


def test_daemon_abort_exits_5_with_status(
    daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    async def script(conv: Conversation) -> None:
        await conv.recv()
        await conv.abort(grpc.StatusCode.FAILED_PRECONDITION, "start.displays: empty")

    assert _run(daemon(script).target) == ExitCode.DAEMON_ERROR
    assert "FAILED_PRECONDITION: start.displays: empty" in capsys.readouterr().err


def test_unreachable_daemon_exits_5(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert _run(f"127.0.0.1:{port}") == ExitCode.DAEMON_ERROR
    assert "could not reach the daemon" in capsys.readouterr().err


def test_unavailable_backend_exits_6_with_causes_and_fixes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", "--server", "127.0.0.1:1", "--backend", "no_such_backend", "t"])
    assert code == ExitCode.BACKEND_UNAVAILABLE
    err = capsys.readouterr().err
    assert "no_such_backend" in err
    assert "fix:" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["run"],
        ["run", "--server", "127.0.0.1:1", "--max-steps", "-1", "t"],
        ["run", "--server", "127.0.0.1:1", "--backend", "fake", "--display", "DP-9", "t"],
        ["run", "--server", "127.0.0.1:1", "--backend", "fake", "   "],
        ["run", "--server", "127.0.0.1:1", "--insecure", "--tls", "t"],
        ["nope"],
        [],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == ExitCode.USAGE
    assert capsys.readouterr().err


def test_without_a_server_run_looks_on_this_machine_like_the_daemon_listens(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --server and no $HOLODESK_SERVER: the daemon's own default address."""
    monkeypatch.delenv("HOLODESK_SERVER", raising=False)
    free = socket.socket()
    free.bind(("127.0.0.1", 0))  # a port nobody listens on, as the default's stand-in
    address = f"127.0.0.1:{free.getsockname()[1]}"
    monkeypatch.setattr(connection_args, "DEFAULT_ADDRESS", address)
    with free:
        code = main(["run", "--backend", "fake", "--no-estop", "t"])
    assert code == ExitCode.DAEMON_ERROR
    assert f"could not reach the daemon at {address}" in capsys.readouterr().err
    assert DEFAULT_LISTEN == defaults.DEFAULT_ADDRESS  # one address, both sides


def test_an_empty_server_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--server", "", "--backend", "fake", "t"]) == ExitCode.USAGE
    assert "--server HOST:PORT" in capsys.readouterr().err


def test_unknown_display_lists_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("127.0.0.1:1", "--display", "DP-9") == ExitCode.USAGE
    assert "no display 'DP-9'; this desktop has 'fake-0'" in capsys.readouterr().err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "run" in capsys.readouterr().out


def test_version_names_the_installed_package(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"holodesk {version('holodesk-client')}"


def test_exit_code_values_are_stable() -> None:
    # Scripts depend on these numbers.
    assert {code.name: int(code) for code in ExitCode} == {
        "SUCCEEDED": 0,
        "FAILED": 1,
        "USAGE": 2,
        "CANCELLED": 3,
        "STEP_LIMIT": 4,
        "DAEMON_ERROR": 5,
        "BACKEND_UNAVAILABLE": 6,
        "TIME_LIMIT": 7,
    }


def test_ctrl_c_cancels_the_session_and_exits_3(daemon: Daemon) -> None:
    in_step = threading.Event()

    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(1, wait("w", 60_000))
        in_step.set()
        message = await conv.recv()
        if message.WhichOneof("event") == "cancel":
            await conv.end(agent_pb2.SESSION_OUTCOME_CANCELLED, reason=message.cancel.reason)

    server = daemon(script)
    argv = ["run", "--server", server.target, "--backend", "fake", "t"]
    process = subprocess.Popen(
        [sys.executable, "-m", "holodesk.client", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert in_step.wait(60), "the client never started the session"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == ExitCode.CANCELLED, err
    # 0 or 1 steps, depending on whether the wait had begun when the signal came.
    assert re.search(r"cancelled after [01] step\(s\): cancelled by the user", err), err
    assert server.conversation.received[-1].WhichOneof("event") == "cancel"


def test_starting_holodesk_imports_no_command_s_heavy_libraries() -> None:
    """Every start builds every command's parser (entry points included), so a parser
    module that imports its command's libraries charges them to all: the MCP SDK
    alone took 0.5 s of `holodesk --help`'s 1.5 s."""
    probe = (
        "import sys\n"
        "from holodesk.client.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('mcp', 'uvicorn', 'starlette', 'torch', 'vllm', 'transformers')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout
