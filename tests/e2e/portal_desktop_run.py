"""One `holodesk run` against a real headless desktop's portal: what the mutter and KWin runs share.

A real daemon on 127.0.0.1 serves a scripted policy whose outputs are model text
in the holo dialect (so they go through the daemon's parser and coordinate
mapping as a model's would): press the Tk probe's OK, type into its entry,
answer. `holodesk run` is a child process in the desktop's environment, XWayland's
DISPLAY included and no backend named, so the client's own choice must take the
wayland backend (the compositor offers none of the wlroots protocols) and its
portal route; every desktop assertion then reads the probe's log.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.support.probe import ProbeApp

TEXT = "hello portal 42"  # mutter 43 and KDE's portal type only keysyms their keymaps have
RUN_TIMEOUT_S = 180
CHOICE_ENV = ("HOLODESK_PLATFORM_BACKEND", "HOLODESK_WAYLAND_INPUT")


@dataclass(frozen=True)
class RunResult:
    returncode: int | None
    events: list[dict[str, Any]]
    stdout: str
    stderr: str

    def outcome(self) -> dict[str, Any]:
        return next(e for e in self.events if e.get("event") == "outcome")


def wait(done: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def swatch_colour(probe: ProbeApp) -> tuple[int, ...]:
    return tuple(int(probe.colors["swatch"][i : i + 2], 16) for i in (1, 3, 5))


def _model(desktop: HeadlessDesktop, x: int, y: int) -> dict[str, float]:
    """A screen pixel in the holo dialect's coordinates: 0-1000 of the image."""
    return {
        "x": round(x / desktop.width * 1000, 3),
        "y": round(y / desktop.height * 1000, 3),
    }


def _step(*actions: dict[str, Any], thought: str = "") -> str:
    return json.dumps({"note": "", "thought": thought, "actions": list(actions)})


def probe_script(desktop: HeadlessDesktop, probe: ProbeApp) -> list[str]:
    ok = _model(desktop, *probe.widgets["ok"].center)
    entry = _model(desktop, *probe.widgets["entry"].center)
    return [
        _step({"action": "click_element", "element": "OK", **ok}, thought="press OK"),
        _step(
            {"action": "write_element_abs", "content": TEXT, **entry},
            thought="type into the entry",
        ),
        _step({"action": "answer", "content": "app exercised"}),
    ]


def client_env(desktop: HeadlessDesktop) -> dict[str, str]:
    """This process's environment with the desktop's over it, and no backend chosen."""
    env = {key: value for key, value in os.environ.items() if key not in CHOICE_ENV}
    return env | desktop.environ()


async def run_holodesk(desktop: HeadlessDesktop, probe: ProbeApp) -> RunResult:
    """`holodesk run --json` against a daemon serving the probe's script; its result."""
    policy = ModelPolicy(
        get_dialect("holo"), ScriptedEngine(probe_script(desktop, probe)), name="scripted"
    )
    async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "holodesk.client", "run", "--json"),
            *("--server", running.address, "--no-estop", "--no-fail-safe"),
            "exercise the app",
            env=client_env(desktop),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        output, errors = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT_S)
    stdout = output.decode()
    events = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return RunResult(process.returncode, events, stdout, errors.decode())


def assert_probe_exercised(result: RunResult, probe: ProbeApp) -> None:
    """The run succeeded with its answer, and the app got the click and the text."""
    assert result.returncode == 0, (result.stdout, result.stderr)
    outcome = result.outcome()
    assert (outcome["outcome"], outcome["answer"]) == ("succeeded", "app exercised"), outcome
    assert probe.events("command"), "the click did not press OK"
    assert probe.wait_for_entry(TEXT) == TEXT
