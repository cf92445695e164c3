"""Daemon-supplied text reaches the user's terminal inert.

A real `holodesk run` (the fake backend) runs in a pseudo-terminal against a
scripted daemon whose session id, policy name, thought, ask_user question, key
names and final answer carry terminal escapes: an OSC 52 clipboard write, a window
title, a clear-screen, a cursor-up over the client's prompt with a fake "sudo
password" line, a bidi override. The test reads every byte the terminal received.
"""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from rich.console import Console

from holodesk.client.doctor.command import render
from holodesk.client.doctor.findings import Finding, Status
from holodesk.client.shown import shown
from holodesk.client.tray.state import TrayState, TrayStatus
from holodesk.proto.v1 import action_pb2, agent_pb2

from .scripted import DEFAULT_SPEC, Conversation, Script, ScriptedDaemon, ask_user, done

pytestmark = pytest.mark.abuse

Daemon = Callable[[Script], ScriptedDaemon]

OSC52 = "\x1b]52;c;cHduZWQ=\x07"  # "pwned" into the clipboard
TITLE = "\x1b]0;root@bank\x07"
CLEAR = "\x1b[2J\x1b[H"
FAKE_SUDO = "\x1b[1A\x1b[2K\r[sudo] password for root: "
BIDI = "\u202etxt.exe"
C1_CSI = "\x9b2J"  # the 8-bit CSI
INJECTED = (OSC52, TITLE, CLEAR, FAKE_SUDO, BIDI, C1_CSI)


def _script(replies: list[str]) -> Script:
    async def script(conv: Conversation) -> None:
        start = await conv.recv()
        assert start.WhichOneof("event") == "start"
        started = agent_pb2.SessionStarted(
            session_id="s-1" + TITLE,
            resume_token="r-1",
            frame_spec=DEFAULT_SPEC,
            policy="scripted" + OSC52,
        )
        await conv.send(agent_pb2.RunSessionResponse(started=started))
        await conv.recv_observation()
        await conv.send_actions(
            1,
            ask_user("q", "Which account?" + FAKE_SUDO),
            thought="thinking" + CLEAR + C1_CSI,
        )
        reply = await conv.recv_observation()
        replies.append(reply.user_reply)
        chord = action_pb2.Action(
            action_id="k", key_chord=action_pb2.KeyChordAction(keys=["x" + CLEAR])
        )
        await conv.send_actions(2, chord, thought=BIDI)
        await conv.recv_observation()
        await conv.send_actions(3, done("d", "all done" + OSC52))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="all done" + OSC52)

    return script


def _run_in_a_pty(target: str, typed: bytes, timeout_s: float = 60.0) -> tuple[int, bytes]:
    """`holodesk run` with stdin, stdout and stderr on one pty; types `typed` when it
    sees the ask_user prompt; returns the exit code and every byte written to the pty."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "200"}
    env.pop("NO_COLOR", None)
    command = [sys.executable, "-m", "holodesk.client", "run", "--server", target]
    command += ["--backend", "fake", "--no-estop", "--no-fail-safe", "pick an account"]
    process = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    answered = False
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed its end
                    break
                if not chunk:
                    break
                seen += chunk
                if not answered and b"\n> " in seen:
                    os.write(master, typed)
                    answered = True
            elif process.poll() is not None:
                break
        return process.wait(timeout=10), seen
    finally:
        process.kill()
        os.close(master)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a Linux pty")
def test_daemon_text_reaches_the_terminal_inert(daemon: Daemon) -> None:
    replies: list[str] = []
    server = daemon(_script(replies))
    code, seen = _run_in_a_pty(server.target, b"the work one\r")
    text = seen.decode("utf-8", errors="replace")
    assert code == 0, text
    for raw in INJECTED:
        assert raw not in text, (raw, text)
    # The terminal received no operating-system command, no clear, no cursor move
    # and no 8-bit control at all (the client's own colours are plain SGR).
    for sequence in ("\x1b]", "\x1b[2J", "\x1b[1A", "\x1b[2K", "\x07", "\x9b", "\u202e"):
        assert sequence not in text, (sequence, text)
    # What was sent is still there to read, made visible.
    assert "\\x1b]52;c;cHduZWQ=\\x07" in text
    assert "\\x1b[1A\\x1b[2K\\x0d[sudo] password for root:" in text
    assert "\\u202etxt.exe" in text
    assert replies == ["the work one"]


def test_shown_escapes_controls_and_keeps_ordinary_text() -> None:
    assert shown("héllo wörld 日本 👍\n\tnext") == "héllo wörld 日本 👍\n\tnext"
    assert shown("a\nb\tc", multiline=False) == "a\\x0ab\\x09c"
    assert shown("\x00\x1b\x7f\x85\x9d\u2028\u2066") == "\\x00\\x1b\\x7f\\x85\\x9d\\u2028\\u2066"


def test_the_tray_title_is_one_inert_line() -> None:
    status = TrayStatus(TrayState.IDLE, "daemon" + TITLE, detail="succeeded: ok\n" + OSC52 + BIDI)
    assert status.title == (
        "holodesk (daemon\\x1b]0;root@bank\\x07): idle: "
        "succeeded: ok\\x0a\\x1b]52;c;cHduZWQ=\\x07\\u202etxt.exe"
    )


def test_doctor_shows_the_daemons_words_inert() -> None:
    """`holodesk doctor` quotes the daemon's version and policy names in its table."""
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=300)
    finding = Finding("daemon", Status.OK, "holodeskd 1.0" + OSC52, fix="see" + TITLE)
    render([finding], console)
    assert "\x1b]" not in buffer.getvalue()
    assert "\\x1b]52;c;cHduZWQ=\\x07" in buffer.getvalue()
