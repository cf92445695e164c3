"""Replay catches an app that received the wrong text, at its default thresholds.

A real session is recorded on Xvfb (daemon, scripted holo-dialect policy, client,
the Tk app of tests/apps/replay_app.py) typing "scripted hi" into the app's field.
Replayed on an app that still holds that text, the app receives
"scripted hiscripted hi": a few glyphs, 0.08% of the frame, which the global
pixel fraction (default 2%) cannot see. The densest-window measure must.
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

import pytest
from PIL import Image

from holodesk.client.cli import main
from holodesk.client.events import Outcome
from holodesk.client.exit_codes import ExitCode
from holodesk.client.replay.compare import compare
from holodesk.client.replay.runner import (
    DEFAULT_LOCAL_THRESHOLD,
    DEFAULT_THRESHOLD,
    Replayer,
    ReplaySettings,
)
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
ENTRY = (40 + 20 + 150, 30 + 20 + 20)  # the app's field, on the screen
TEXT = "scripted hi"
# A Tk label in a panel clock's size, showing the time given on the command line.
CLOCK = """
import sys, tkinter as tk
root = tk.Tk(); root.geometry("200x40+1000+740")
tk.Label(root, text=sys.argv[1], font=("DejaVu Sans", 11)).pack()
root.update(); print("ready", flush=True); root.mainloop()
"""


@contextmanager
def started(command: list[str], display: str) -> Iterator[None]:
    """A Tk process that prints "ready" once drawn; stopped on exit."""
    env = {**os.environ, "DISPLAY": display}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready", f"exit {process.poll()}"
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def typed(display: str) -> Iterator[None]:
    """The app with TEXT already in its field (typed through the X server), as a
    recording's replay leaves it when the app is not restarted."""
    with started([sys.executable, str(APP)], display):
        backend = open_backend("x11", display=display)
        try:
            backend.input.click(*ENTRY)
            backend.input.type_text(TEXT)
        finally:
            backend.close()
        yield


def script() -> list[str]:
    x, y = (round(v / s * 1000, 3) for v, s in zip(ENTRY, SCREEN, strict=True))
    actions = [
        {"action": "write_element_abs", "content": TEXT, "x": x, "y": y},
        {"action": "wait", "seconds": 0.5},
    ]
    return [
        json.dumps({"note": "", "thought": "type", "actions": actions}),
        json.dumps({"note": "", "thought": "", "actions": [{"action": "answer", "content": "ok"}]}),
    ]


@pytest.fixture(scope="module")
def recording(xvfb: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recordings")

    async def record() -> None:
        policy = ModelPolicy(get_dialect("holo"), ScriptedEngine(script()), name="scripted")
        backend = open_backend("x11", display=xvfb)
        config = ServerConfig(listen="127.0.0.1:0", record=True, record_dir=str(root))
        try:
            async with serve(config, policies=[policy]) as running:
                outcome = await run_session(running.address, "type", backend, SessionOptions())
        finally:
            backend.close()
        assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason

    with started([sys.executable, str(APP)], xvfb):
        asyncio.run(record())
    (found,) = find_recordings([root])
    return found


def test_a_replay_into_an_app_that_gets_the_wrong_text_fails_at_the_defaults(
    xvfb: str, recording: Path
) -> None:
    # The start check would already see the leftover text; skip it, so the step
    # that types is the one judged, as a replay of a later step would be.
    settings = ReplaySettings(settle_s=0.5, check_start=False)
    with typed(xvfb):
        backend = open_backend("x11", display=xvfb)
        try:
            result = Replayer(LoadedRecording.load(recording), backend, settings).run()
        finally:
            backend.close()
    step = result.steps[0]
    assert (step.step, step.matched) == (1, False), result.steps
    assert step.diff is not None
    # The whole frame barely changed: only the densest line shows the wrong text.
    assert step.diff.fraction < DEFAULT_THRESHOLD / 10
    assert step.diff.local_fraction > DEFAULT_LOCAL_THRESHOLD


def test_the_same_replay_on_a_fresh_app_matches(
    xvfb: str, recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with started([sys.executable, str(APP)], xvfb):
        code = main(["replay", str(recording), "--backend", "x11"])
    out = capsys.readouterr().out
    assert code == ExitCode.SUCCEEDED, out


def test_a_clock_ticking_is_not_a_mismatch_but_a_doubled_text_is(xvfb: str) -> None:
    """The defaults on real Tk pixels: a panel clock's minute passing stays within them."""

    def screen() -> Image.Image:
        backend = open_backend("x11", display=xvfb)
        try:
            return backend.screen.grab(backend.screen.displays()[0].bounds).convert("RGB")
        finally:
            backend.close()

    shots = []
    for time in ("12:59", "13:00"):
        with started([sys.executable, "-c", CLOCK, time], xvfb):
            shots.append(screen())
    tick = compare(shots[0], shots[1])
    assert tick.changed > 0
    assert tick.fraction <= DEFAULT_THRESHOLD
    assert tick.local_fraction <= DEFAULT_LOCAL_THRESHOLD
