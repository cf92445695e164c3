"""Record a real session on Xvfb, then replay it: same app -> match; changed app -> mismatch.

Real parts throughout: the daemon (gRPC on 127.0.0.1:0, recording to disk), a
scripted model policy in the holo dialect, the client's run_session on the X11
backend, a Tk app (tests/apps/replay_app.py), and `holodesk replay` on the same
X server. Between the recording and each replay the app is restarted: a reset.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from holodesk.client.cli import main
from holodesk.client.events import Outcome
from holodesk.client.exit_codes import ExitCode
from holodesk.client.replay.runner import Replayer, ReplaySettings
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.data.stepview import LoadedRecording, find_recordings
from holodesk.platform.select import open_backend

pytestmark = [pytest.mark.x11, pytest.mark.e2e]

APP = Path(__file__).resolve().parent.parent / "apps" / "replay_app.py"
SCREEN = (1280, 800)
# The app's window is at (40, 30); these are its widgets' centres on the screen.
ENTRY = (40 + 20 + 150, 30 + 20 + 20)
BUTTON = (40 + 340 + 60, 30 + 20 + 20)
# The panel Greet shows, on the screen: (x0, y0, x1, y1), exclusive ends.
PANEL = (40 + 20, 30 + 90, 40 + 20 + 520, 30 + 90 + 240)
BLUE, ORANGE = "#2060c0", "#e07010"


@contextmanager
def app(display: str, accent: str = BLUE) -> Iterator[None]:
    """The app, started fresh, drawn before this yields."""
    command = [sys.executable, str(APP), "--accent", accent]
    env = {**os.environ, "DISPLAY": display}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.strip() == "ready", f"the app did not start (exit {process.poll()})"
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)


def to_model(x: float, y: float) -> dict[str, float]:
    """Holo2 coordinates: normalized 0-1000 of the image."""
    return {"x": round(x / SCREEN[0] * 1000, 3), "y": round(y / SCREEN[1] * 1000, 3)}


def step(*actions: dict[str, Any], thought: str = "") -> str:
    return json.dumps({"note": "", "thought": thought, "actions": list(actions)})


# A short wait ends each step, so the recorded frame shows the app repainted.
SCRIPT = [
    step(
        {"action": "write_element_abs", "content": "Zoë", **to_model(*ENTRY)},
        {"action": "wait", "seconds": 0.5},
        thought="type the name",
    ),
    step(
        {"action": "click_element", "element": "Greet", **to_model(*BUTTON)},
        {"action": "wait", "seconds": 0.5},
        thought="greet",
    ),
    step({"action": "answer", "content": "greeted"}),
]


@pytest.fixture(scope="module")
def recording(xvfb: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recordings")

    async def record() -> None:
        policy = ModelPolicy(get_dialect("holo"), ScriptedEngine(SCRIPT), name="scripted")
        backend = open_backend("x11", display=xvfb)
        config = ServerConfig(listen="127.0.0.1:0", record=True, record_dir=str(root))
        try:
            async with serve(config, policies=[policy]) as running:
                outcome = await run_session(running.address, "greet Zoë", backend, SessionOptions())
        finally:
            backend.close()
        assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason

    with app(xvfb):
        asyncio.run(record())
    (found,) = find_recordings([root])
    return found


def test_the_recording_holds_each_step_and_the_screens_it_led_to(recording: Path) -> None:
    loaded = LoadedRecording.load(recording)
    steps = loaded.steps()
    assert [s.step for s in steps] == [1, 2, 3]
    assert steps[0].next_frame is not None
    assert steps[1].next_frame is not None
    assert steps[2].next_frame is None
    # The panel appeared after step 2, in the app's colour.
    frame = steps[1].next_frame
    scale = frame.width / SCREEN[0]
    with Image.open(frame.path) as image:
        probe = (round((PANEL[0] + 5) * scale), round((PANEL[1] + 5) * scale))
        assert image.convert("RGB").getpixel(probe) == (0x20, 0x60, 0xC0)


def test_replaying_on_the_same_app_matches_every_step(
    xvfb: str, recording: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    diffs = tmp_path / "diffs"
    with app(xvfb):
        code = main(["replay", str(recording), "--backend", "x11", "--diff-dir", str(diffs)])
    out = capsys.readouterr().out
    assert code == ExitCode.SUCCEEDED, out
    assert "all steps match" in out
    assert not diffs.exists()


def test_replaying_on_a_changed_app_reports_the_step_and_the_region(
    xvfb: str, recording: Path, tmp_path: Path
) -> None:
    diffs = tmp_path / "diffs"
    backend = open_backend("x11", display=xvfb)
    try:
        with app(xvfb, accent=ORANGE):
            result = Replayer(
                LoadedRecording.load(recording),
                backend,
                ReplaySettings(diff_dir=diffs, settle_s=1.0),
            ).run()
    finally:
        backend.close()

    assert [(s.step, s.matched) for s in result.steps] == [
        (0, True),
        (1, True),
        (2, False),
        (3, True),
    ]
    mismatch = result.steps[2]
    assert mismatch.diff is not None
    assert mismatch.diff.bbox is not None
    loaded = LoadedRecording.load(recording)
    frame = loaded.steps()[1].next_frame
    assert frame is not None
    scale = frame.width / SCREEN[0]
    expected = [round(v * scale) for v in PANEL]
    assert all(abs(got - want) <= 3 for got, want in zip(mismatch.diff.bbox, expected, strict=True))
    assert mismatch.diff_file == diffs / "step-002.png"
    assert mismatch.diff_file.is_file()


def test_the_cli_exits_1_on_the_changed_app(
    xvfb: str, recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with app(xvfb, accent=ORANGE):
        code = main(["replay", str(recording), "--backend", "x11", "--settle", "0.5"])
    out = capsys.readouterr().out
    assert code == ExitCode.FAILED
    assert "MISMATCH" in out
    assert "1 step(s) mismatch" in out
