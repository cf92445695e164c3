"""Replay stops before its first action when the desktop does not start as recorded.

The case from issue 30: a session typed "Bob" into a real Tk app and greeted
(tests/apps/replay_app.py, which writes what it received to a state file), and
`holodesk replay` then ran on that same app, not reset. Its step 0 (the screen
before the first action) did not match, and replay still typed "Bob" again: the
app received "BobBob". Now it stops there, exit 1, says why and touches nothing;
`--start-anyway` is how a user asks for the old behaviour.

Real parts: the daemon (gRPC on 127.0.0.1:0, recording), a scripted holo-dialect
policy, the client's run_session on the X11 backend of an Xvfb, the Tk app, and
the `holodesk replay` CLI.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.cli import main
from holodesk.client.events import Outcome
from holodesk.client.exit_codes import ExitCode
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.data.stepview import find_recordings
from holodesk.platform.select import open_backend

pytestmark = [pytest.mark.x11, pytest.mark.e2e]

APP = Path(__file__).resolve().parent.parent / "apps" / "replay_app.py"
SCREEN = (1280, 800)
# The app's window is at (40, 30); its field's and its button's centres on the screen.
ENTRY = (40 + 20 + 150, 30 + 20 + 20)
BUTTON = (40 + 340 + 60, 30 + 20 + 20)


def to_model(x: float, y: float) -> dict[str, float]:
    """Holo2 coordinates: normalized 0-1000 of the image."""
    return {"x": round(x / SCREEN[0] * 1000, 3), "y": round(y / SCREEN[1] * 1000, 3)}


def step(*actions: dict[str, Any]) -> str:
    return json.dumps({"note": "", "thought": "", "actions": list(actions)})


SCRIPT = [
    step(
        {"action": "write_element_abs", "content": "Bob", **to_model(*ENTRY)},
        {"action": "wait", "seconds": 0.5},
    ),
    step(
        {"action": "click_element", "element": "Greet", **to_model(*BUTTON)},
        {"action": "wait", "seconds": 0.5},
    ),
    step({"action": "answer", "content": "greeted"}),
]


@dataclass(frozen=True)
class UsedApp:
    """A recording, and the app it was made on, still running as the session left it."""

    recording: Path
    state: Path

    def received(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.state.read_text(encoding="utf-8"))
        return loaded


@pytest.fixture
def used_app(xvfb: str, tmp_path: Path) -> Iterator[UsedApp]:
    """Record "type Bob; Greet" on a fresh app and leave that app running: not reset."""
    state = tmp_path / "state.json"
    env = {**os.environ, "DISPLAY": xvfb}
    command = [sys.executable, str(APP), "--state", str(state)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready", f"exit {process.poll()}"
        root = tmp_path / "recordings"
        asyncio.run(_record(xvfb, root))
        (recording,) = find_recordings([root])
        used = UsedApp(recording, state)
        assert used.received() == {"name": "Bob", "greeted": ["Bob"]}
        yield used
    finally:
        process.terminate()
        process.wait(timeout=10)


async def _record(display: str, root: Path) -> None:
    policy = ModelPolicy(get_dialect("holo"), ScriptedEngine(SCRIPT), name="scripted")
    backend = open_backend("x11", display=display)
    config = ServerConfig(listen="127.0.0.1:0", record=True, record_dir=str(root))
    try:
        async with serve(config, policies=[policy]) as running:
            outcome = await run_session(running.address, "greet Bob", backend, SessionOptions())
    finally:
        backend.close()
    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason


def replay(used: UsedApp) -> list[str]:
    """`holodesk replay` of the recording on this display."""
    return ["replay", str(used.recording), "--backend", "x11", "--settle", "0.5"]


def settled(used: UsedApp, want: str, timeout_s: float = 5.0) -> dict[str, Any]:
    """The app's state once its name is `want`, or as it is after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    state = used.received()
    while state["name"] != want and time.monotonic() < deadline:
        time.sleep(0.1)
        state = used.received()
    return state


def test_replay_on_an_app_not_reset_stops_before_acting(
    used_app: UsedApp, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    diffs = tmp_path / "diffs"
    code = main([*replay(used_app), "--diff-dir", str(diffs)])
    captured = capsys.readouterr()
    assert code == ExitCode.FAILED, captured.out + captured.err
    # Nothing was typed or clicked: the app holds what the recorded session left.
    time.sleep(1.0)  # what a replay would have typed has reached the app by now
    assert used_app.received() == {"name": "Bob", "greeted": ["Bob"]}
    # It says so, and names the mismatch: how much differs, where, the picture of it.
    error = " ".join(captured.err.split())
    assert "does not match the recording's start" in error, error
    assert "no action was run" in error
    assert "of the frame differs" in error
    assert "--start-anyway" in error
    assert str(diffs / "step-000.png") in error
    assert (diffs / "step-000.png").is_file()
    # Step 0 is reported as a mismatch, and no step after it ran.
    assert "MISMATCH" in captured.out
    assert "step 1:" not in captured.err


def test_start_anyway_replays_on_the_mismatched_app(
    used_app: UsedApp, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([*replay(used_app), "--start-anyway"])
    captured = capsys.readouterr()
    # Asked to go on, it does: the app receives the text a second time (issue 30's
    # "BobBob") and the replay reports the mismatches it led to.
    assert code == ExitCode.FAILED, captured.out + captured.err
    assert settled(used_app, "BobBob") == {"name": "BobBob", "greeted": ["Bob", "BobBob"]}
    assert "does not match the recording's start" in " ".join(captured.err.split())
