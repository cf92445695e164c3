"""`holodesk tray` on a real X display: the icon docks into a real system tray
(trayer), its own pystray menu items start a real session against a real daemon,
the X11 backend drives the Tk probe app, and the task dialog takes typed input.

pystray's plain-X11 backend draws the icon but has no pop-up menu (its menus need
AppIndicator), so the menu items are invoked through pystray's own Menu objects,
the same objects a desktop's menu would call.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from Xlib import X
from Xlib.display import Display
from Xlib.protocol.event import ClientMessage

from holodesk.client.safety.settings import SafetySettings
from holodesk.client.session import SessionOptions
from holodesk.client.tray.ask import TITLE, ask_in_subprocess
from holodesk.client.tray.controller import TrayController
from holodesk.client.tray.icon import TrayIcon
from holodesk.client.tray.state import ServerProfile, TrayState
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.server import serve
from holodesk.platform.select import open_backend
from tests.support.probe import ProbeApp

pytestmark = [pytest.mark.x11, pytest.mark.e2e]
GUARD_S = 30.0


def _program(name: str, package: str) -> str:
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (apt-get install {package}; tools/setup.sh does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
def system_tray(xvfb: str) -> Iterator[None]:
    # The X server shares this display with earlier tests: a tray that one of them
    # stopped may still own the selection a moment after its process exited, and an
    # icon that docks then asks a window that is gone (pystray never asks again).
    _wait_for_tray_owner(xvfb, owned=False)
    trayer = subprocess.Popen(
        [
            _program("trayer", "trayer"),
            *("--edge", "top", "--align", "right"),
            *("--widthtype", "pixel", "--width", "200", "--height", "32"),
        ],
        env={**os.environ, "DISPLAY": xvfb},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_tray_owner(xvfb)
        _wait_until_it_docks_an_icon(xvfb)
        yield
    finally:
        trayer.terminate()
        trayer.wait(10)
        _wait_for_tray_owner(xvfb, owned=False)


def _wait_for_tray_owner(display_name: str, *, owned: bool = True) -> None:
    """Icons dock only once a tray owns the _NET_SYSTEM_TRAY_S0 selection (`owned`);
    a stopped tray is gone only once the server has released it (not `owned`)."""
    display = Display(display_name)
    try:
        selection = display.intern_atom("_NET_SYSTEM_TRAY_S0")
        deadline = time.monotonic() + GUARD_S
        while (display.get_selection_owner(selection) != X.NONE) != owned:
            state = "became" if owned else "stopped being"
            assert time.monotonic() < deadline, f"trayer never {state} the system tray"
            time.sleep(0.1)
    finally:
        display.close()


def _wait_until_it_docks_an_icon(display_name: str) -> None:
    """The tray is ready once it docks an icon: trayer owns the selection a moment
    before it embeds what asks, and an icon that asks then is never docked (pystray
    asks once). A throwaway XEmbed window asks, again every half second, until trayer
    reparents it; then it goes, and the icon under test asks a tray that answers."""
    display = Display(display_name)
    try:
        screen = display.screen()
        owner = display.get_selection_owner(display.intern_atom("_NET_SYSTEM_TRAY_S0"))
        opcode = display.intern_atom("_NET_SYSTEM_TRAY_OPCODE")
        icon = screen.root.create_window(0, 0, 16, 16, 0, screen.root_depth)
        xembed = display.intern_atom("_XEMBED_INFO")
        icon.change_property(xembed, xembed, 32, [0, 1])  # version 0, mapped
        deadline = time.monotonic() + GUARD_S
        try:
            while icon.query_tree().parent.id == screen.root.id:
                assert time.monotonic() < deadline, "trayer never docked an icon"
                request = ClientMessage(
                    window=owner, client_type=opcode, data=(32, [X.CurrentTime, 0, icon.id, 0, 0])
                )
                owner.send_event(request, event_mask=X.NoEventMask)
                display.flush()
                time.sleep(0.5)
        finally:
            icon.destroy()
            display.sync()
    finally:
        display.close()


def _xdotool(*args: str) -> str:
    done = subprocess.run(
        [_program("xdotool", "xdotool"), *args],
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        check=False,
    )
    return done.stdout


def _wait_docked(title: str) -> str:
    """Waits until the icon's window sits inside the tray's panel in the window tree;
    "" when it does, else the last window tree seen (for the failure message)."""
    deadline = time.monotonic() + GUARD_S
    tree = ""
    while time.monotonic() < deadline:
        tree = subprocess.run(
            ["xwininfo", "-root", "-tree"],
            capture_output=True,
            text=True,
            timeout=GUARD_S,
            check=True,
        ).stdout
        lines = tree.splitlines()
        panel = next((i for i, line in enumerate(lines) if '("panel" "trayer")' in line), None)
        mark = f'"{title}": ("holodeskSystemTrayIcon"'
        icon = next((i for i, line in enumerate(lines) if mark in line), None)
        if panel is not None and icon is not None and icon > panel:
            indent = len(lines[icon]) - len(lines[icon].lstrip())
            if indent > len(lines[panel]) - len(lines[panel].lstrip()):
                return ""
        time.sleep(0.2)
    return tree


def _menu_item(icon: Any, label: str) -> Any:
    for item in icon.menu.items:
        if item.text == label:
            return item
    raise AssertionError(f"no menu item {label!r}: {[i.text for i in icon.menu.items]}")


async def test_tray_menu_runs_a_session_on_the_desktop(
    xvfb: str, system_tray: None, tmp_path: Path
) -> None:
    probe = ProbeApp.start(xvfb, tmp_path / "probe.jsonl")
    try:
        ok_x, ok_y = probe.widgets["ok"].center
        # holo1.5: absolute pixels of the frame, which is the 1280x800 screen itself.
        outputs = [
            json.dumps(
                {"thought": "press OK", "action": {"action": "click", "x": ok_x, "y": ok_y}}
            ),
            json.dumps({"thought": "done", "action": {"action": "answer", "content": "pressed"}}),
        ]
        policy = ModelPolicy(get_dialect("holo1.5"), ScriptedEngine(outputs), name="scripted")
        async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
            await asyncio.wait_for(asyncio.shield(running.policies_started), GUARD_S)
            controller = TrayController(
                [ServerProfile("local", running.address)],
                lambda: open_backend("x11", display=xvfb),
                ask_task=lambda: "press OK",
                open_path=print,
                session_options=SessionOptions(
                    safety=SafetySettings(emergency_stop=None, fail_safe=False)
                ),
            )
            icon = TrayIcon(controller)
            thread = threading.Thread(target=icon.run, daemon=True)
            thread.start()
            try:
                assert await asyncio.to_thread(icon.shown.wait, GUARD_S)
                pystray_icon = icon._icon
                assert pystray_icon.title == "holodesk (local): idle"

                start = _menu_item(pystray_icon, "Start task…")
                assert start.enabled
                start(pystray_icon)  # what the desktop's menu calls
                status = await asyncio.to_thread(controller.wait_idle, GUARD_S)
                assert status.state is TrayState.IDLE, status
                assert status.detail == "succeeded: pressed"
                assert await asyncio.to_thread(probe.wait_for_event, "command", widget="ok")
                icon.show(status)
                assert pystray_icon.title == "holodesk (local): idle: succeeded: pressed"
                assert not _menu_item(pystray_icon, "Emergency stop").enabled
            finally:
                await asyncio.to_thread(icon.stop)
                thread.join(GUARD_S)
    finally:
        probe.stop()


def test_holodesk_tray_docks_into_a_real_system_tray(
    xvfb: str, system_tray: None, tmp_path: Path
) -> None:
    # The real command in its own process, as `holodesk service install` runs it.
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "holodesk.client", "tray"),
            *("--server", "lab=127.0.0.1:9", "--record-dir", str(tmp_path)),
        ],
        env={**os.environ, "DISPLAY": xvfb},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Docked, titled with the chosen server and the client's state.
        undocked = _wait_docked("holodesk (lab): idle")
        running = process.poll() is None
    finally:
        process.terminate()
        _, err = process.communicate(timeout=GUARD_S)
    assert not undocked, f"the icon never docked into the tray:\n{undocked}\n{err}"
    assert running, err
    assert "Traceback" not in err, err


def _dialog_window(worker: threading.Thread) -> str:
    """The task dialog's window, once it is mapped (fails if the dialog process ended)."""
    deadline = time.monotonic() + 2 * GUARD_S  # a loaded machine starts Tk slowly
    while time.monotonic() < deadline:
        found = _xdotool("search", "--onlyvisible", "--name", TITLE).split()
        if found:
            return found[0]
        assert worker.is_alive(), "the task dialog ended before it showed a window"
        time.sleep(0.2)
    raise AssertionError("the task dialog never appeared")


def test_task_dialog_returns_what_the_user_typed(xvfb: str) -> None:
    answers: list[str | None] = []
    worker = threading.Thread(target=lambda: answers.append(ask_in_subprocess(3 * GUARD_S)))
    worker.start()
    window = _dialog_window(worker)
    _xdotool("windowactivate", "--sync", window)
    # Plain XTEST input to the focused dialog: with --window, xdotool sends the key's
    # release to a window the press already destroyed, leaving the key held (and
    # auto-repeating into later tests).
    _xdotool("type", "open the report")
    _xdotool("key", "Return")
    worker.join(GUARD_S)
    assert answers == ["open the report"]


def test_task_dialog_escape_is_no_task(xvfb: str) -> None:
    answers: list[str | None] = []
    worker = threading.Thread(target=lambda: answers.append(ask_in_subprocess(3 * GUARD_S)))
    worker.start()
    window = _dialog_window(worker)
    _xdotool("windowactivate", "--sync", window)
    _xdotool("key", "Escape")
    worker.join(GUARD_S)
    assert answers == [None]
