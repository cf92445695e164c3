"""One whole agent run on sway: daemon, `holodesk run`, the wlroots backend, a native app.

A real daemon on 127.0.0.1 serves a scripted policy whose outputs are model text
in the holo dialect (so they go through the daemon's parser and coordinate
mapping as a model's would); `holodesk run`, a child process whose environment
names only the headless sway's Wayland socket (no DISPLAY, no backend named),
chooses the wlroots backend itself and drives the GTK conformance app, native on
sway. Every assertion on the desktop reads what the app logged.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.platform.base import Region
from holodesk.platform.select import open_backend
from tests.platform.wlroots.gtk_probe import GtkProbe, GtkUnavailableError
from tests.platform.wlroots.gtk_target import CONTROL_MASK, GtkTarget, start_app
from tests.platform.wlroots.sway import Sway, SwayUnavailableError

pytestmark = [pytest.mark.e2e, pytest.mark.wlroots]

SCREEN = (1280, 800)
WINDOW = Region(40, 30, 600, 400)
UNICODE_TEXT = "héllo wörld ñ € 日本"
RUN_TIMEOUT_S = 120


@pytest.fixture
def sway() -> Iterator[Sway]:
    try:
        running = Sway.start(outputs=(f"output HEADLESS-1 resolution {SCREEN[0]}x{SCREEN[1]}",))
    except SwayUnavailableError as error:
        pytest.fail(f"headless sway cannot start here: {error}")
    yield running
    running.stop()


@pytest.fixture
def app(sway: Sway, tmp_path: Path) -> Iterator[GtkTarget]:
    """The native app, shown and taking pointer input (the target's warm-up waits
    for that), with its widgets in screen pixels."""
    try:
        probe: GtkProbe = start_app(sway, tmp_path / "gtk.log", WINDOW)
    except GtkUnavailableError as error:
        pytest.fail(f"the native Wayland app cannot run here: {error}")
    try:
        with GtkTarget.open(
            lambda: open_backend("wlroots", socket=sway.wayland_socket), probe
        ) as t:
            yield t
    finally:
        probe.stop()


def _model(x: int, y: int) -> dict[str, float]:
    """A screen pixel in the holo dialect's coordinates: 0-1000 of the image."""
    return {"x": round(x / SCREEN[0] * 1000, 3), "y": round(y / SCREEN[1] * 1000, 3)}


def _step(*actions: dict[str, Any], thought: str = "") -> str:
    return json.dumps({"note": "", "thought": thought, "actions": list(actions)})


def _script(app: GtkTarget) -> list[str]:
    def centre(name: str) -> tuple[int, int]:
        region = app.widgets[name]
        return region.x + region.width // 2, region.y + region.height // 2

    return [
        _step({"action": "click_element", "element": "OK", **_model(*centre("ok"))}, thought="OK"),
        _step(
            {"action": "write_element_abs", "content": UNICODE_TEXT, **_model(*centre("entry"))},
            thought="type into the entry",
        ),
        _step({"action": "hotkey", "keys": ["ctrl", "a"]}, thought="select all"),
        _step(
            {"action": "scroll", "direction": "down", "amount": 2, **_model(*centre("canvas"))},
            thought="scroll the canvas",
        ),
        _step({"action": "answer", "content": "app exercised"}),
    ]


async def test_holodesk_run_on_sway_drives_the_native_app(sway: Sway, app: GtkTarget) -> None:
    """Proves: `holodesk run` with only WAYLAND_DISPLAY set picks wlroots, and the run
    succeeds: the app got the click on OK, the Unicode text, Ctrl held under the
    chord's A, and two scroll notches down on the canvas."""
    policy = ModelPolicy(get_dialect("holo"), ScriptedEngine(_script(app)), name="scripted")
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DISPLAY", "XDG_SESSION_TYPE", "HOLODESK_PLATFORM_BACKEND")
    }
    env["WAYLAND_DISPLAY"] = sway.wayland_socket
    async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "holodesk.client", "run", "--json"),
            *("--server", running.address, "--no-estop", "--no-fail-safe"),
            "exercise the app",
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        output, errors = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT_S)
    events = [json.loads(line) for line in output.decode().splitlines() if line.strip()]
    assert process.returncode == 0, (output.decode(), errors.decode())
    outcome = next(e for e in events if e.get("event") == "outcome")
    assert (outcome["outcome"], outcome["answer"]) == ("succeeded", "app exercised"), outcome

    assert app.app.events("command"), "the click did not press OK"
    assert app.wait_text("line", UNICODE_TEXT) == UNICODE_TEXT
    chord = [e for e in app.app.events("key") if e["keyval"] == "a"]
    assert chord, "no A arrived"
    assert chord[0]["state"] & CONTROL_MASK
    app.wait(lambda: len(app.app.events("scroll")) >= 2, "two scroll notches")
    assert [(e["dx"], e["dy"]) for e in app.app.events("scroll")] == [(0, 1), (0, 1)]
