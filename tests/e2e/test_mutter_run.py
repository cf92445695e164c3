"""One whole agent run on a real headless GNOME (mutter 43): daemon, `holodesk run`, the portal.

A real daemon on 127.0.0.1 serves a scripted policy whose outputs are model text
in the holo dialect (so they go through the daemon's parser and coordinate
mapping as a model's would). `holodesk run` is a child process whose environment
is the desktop's without DISPLAY and without a backend named: mutter offers none
of the wlroots protocols, so the client chooses the wayland backend itself, whose
portal route starts a RemoteDesktop session (the GnomePerson answers its dialog,
which Debian 12's RemoteDesktop version 1 shows at every start), reads frames
from that session's PipeWire stream and types through NotifyKeyboardKeysym. The
app is the Tk probe on mutter's XWayland; every desktop assertion reads its log.

KWin has no such run: its stream sends no pixels here, so a run's first
screenshot fails (tests/platform/wayland/test_portal_kwin.py records that).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from tests.platform.wayland.conftest import start_desktop
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.platform.wayland.gnome_person import GnomePerson
from tests.support.probe import ProbeApp

pytestmark = [pytest.mark.e2e, pytest.mark.portal_desktop]

TEXT = "hello portal 42"  # mutter 43 types only keysyms its keymap has keys for
RUN_TIMEOUT_S = 180


@pytest.fixture
def desktop() -> Iterator[HeadlessDesktop]:
    running = start_desktop("mutter")
    yield running
    running.stop()


@pytest.fixture
def person(desktop: HeadlessDesktop) -> Iterator[GnomePerson]:
    someone = GnomePerson(desktop)
    yield someone
    someone.close()


@pytest.fixture
def probe(desktop: HeadlessDesktop, person: GnomePerson, tmp_path: Path) -> Iterator[ProbeApp]:
    """The Tk probe on mutter's XWayland, once the screen shows it drawn in place
    (input during mutter's map animation is lost)."""
    app = ProbeApp.start(desktop.x_display, tmp_path / "probe.log", x=40, y=30)
    swatch = app.widgets["swatch"]
    colour = tuple(int(app.colors["swatch"][i : i + 2], 16) for i in (1, 3, 5))
    try:
        _wait(
            lambda: person.screen().convert("RGB").getpixel(swatch.center) == colour,
            "the probe window drawn in place",
        )
        yield app
    finally:
        app.stop()


def _wait(done: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _model(desktop: HeadlessDesktop, x: int, y: int) -> dict[str, float]:
    """A screen pixel in the holo dialect's coordinates: 0-1000 of the image."""
    return {
        "x": round(x / desktop.width * 1000, 3),
        "y": round(y / desktop.height * 1000, 3),
    }


def _step(*actions: dict[str, Any], thought: str = "") -> str:
    return json.dumps({"note": "", "thought": thought, "actions": list(actions)})


def _script(desktop: HeadlessDesktop, probe: ProbeApp) -> list[str]:
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


async def test_holodesk_run_on_gnome_drives_the_probe_through_the_portal(
    desktop: HeadlessDesktop, person: GnomePerson, probe: ProbeApp, tmp_path: Path
) -> None:
    """Proves: `holodesk run` on a GNOME session (WAYLAND_DISPLAY only) takes the
    wayland backend's portal route, a person allows it once, and the run succeeds:
    the app got the click on OK and the typed text, in its entry."""
    policy = ModelPolicy(
        get_dialect("holo"), ScriptedEngine(_script(desktop, probe)), name="scripted"
    )
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DISPLAY", "HOLODESK_PLATFORM_BACKEND", "HOLODESK_WAYLAND_INPUT")
    }
    env |= {key: value for key, value in desktop.environ().items() if key != "DISPLAY"}
    failures: list[BaseException] = []

    def answer() -> None:
        try:
            person.allow_remote_desktop(evidence=tmp_path / "dialog.png")
        except BaseException as error:  # re-raised below, in the test's thread
            failures.append(error)

    async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "holodesk.client", "run", "--json"),
            *("--server", running.address, "--no-estop", "--no-fail-safe"),
            "exercise the app",
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        person_thread = threading.Thread(target=answer, name="gnome-person")
        person_thread.start()
        try:
            output, errors = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT_S)
        finally:
            await asyncio.to_thread(person_thread.join)
    assert not failures, failures
    events = [json.loads(line) for line in output.decode().splitlines() if line.strip()]
    assert process.returncode == 0, (output.decode(), errors.decode())
    outcome = next(e for e in events if e.get("event") == "outcome")
    assert (outcome["outcome"], outcome["answer"]) == ("succeeded", "app exercised"), outcome

    assert probe.events("command"), "the click did not press OK"
    assert probe.wait_for_entry(TEXT) == TEXT
