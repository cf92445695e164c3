"""`holodesk tray` on a real X display with a real system tray (trayer, XEmbed): the
Qt icon docks at the tray's size and paints a round icon (not a stretched oval), a
click on it opens its menu, and a click on each entry does its job against a real
daemon on 127.0.0.1 driving the Tk probe app through the X11 backend; the real
command, in its own process, opens the live view in $BROWSER from its menu.

Every click is real X input (xdotool) through the tray host's path: onto the docked
icon, then onto the entry where Qt says the open menu shows it.
"""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import shiboken6
from PySide6.QtWidgets import QApplication
from Xlib import X
from Xlib.display import Display

from holodesk.client.safety.settings import SafetySettings
from holodesk.client.session import SessionOptions
from holodesk.client.tray import menu
from holodesk.client.tray.ask import ask_in_subprocess
from holodesk.client.tray.controller import TrayController
from holodesk.client.tray.icon import TrayIcon
from holodesk.client.tray.state import ServerProfile, TrayState, TrayStatus
from holodesk.platform.select import open_backend
from tests.support.dbus_session import private_session_bus
from tests.support.probe import ProbeApp
from tests.support.system_tray import (
    GUARD_S,
    Docked,
    assert_round,
    dialog_window,
    painted_box,
    trayer,
    wait_docked,
    wait_for_tray_owner,
    wait_undocked,
    xdotool,
)
from tests.support.tray_daemon import scripted_daemon, watching_script

pytestmark = [pytest.mark.x11, pytest.mark.e2e]
# The WM_CLASS Qt gives the icon's window: the application's name.
APP_CLASS = "holodesk"


@pytest.fixture(autouse=True)
def no_status_notifier_watcher(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A session bus with no StatusNotifierWatcher, whatever the machine's own has:
    Qt then docks by XEmbed, which these tests are about."""
    with private_session_bus() as address:
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
        yield


@pytest.fixture
def system_tray(xvfb: str) -> Iterator[None]:
    with trayer(xvfb):
        yield


@pytest.fixture
def x_display(xvfb: str) -> Iterator[Display]:
    display = Display(xvfb)
    yield display
    display.close()


@pytest.fixture
def qt_app(xvfb: str) -> Iterator[QApplication]:
    """Qt's application in this process, deleted afterwards: a QApplication left
    connected to the session's Xvfb would see it go away at the end of the run."""
    app = QApplication(["holodesk"])
    yield app
    app.processEvents()
    # The test's menu and icon go first (they sit in reference cycles with their
    # controller), while the application they belong to still exists.
    gc.collect()
    shiboken6.delete(app)


async def _pump_until(app: QApplication, condition: Callable[[], bool], what: str) -> None:
    """Runs Qt's events (this thread owns them) and the daemon's loop until
    `condition` holds."""
    deadline = time.monotonic() + GUARD_S
    while True:
        app.processEvents()
        if condition():
            return
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.02)


def _viewable(display: Display, window_id: int) -> bool:
    window = display.create_resource_object("window", window_id)
    return bool(window.get_attributes().map_state == X.IsViewable)


async def _click_entry(
    app: QApplication, display: Display, icon: TrayIcon, docked: Docked, label: str
) -> None:
    """Clicks the docked icon, waits for its menu to be on the screen, clicks `label`."""
    await _pump_until(app, lambda: not icon.menu.isVisible(), "the menu closed")
    x, y = docked.center
    await asyncio.to_thread(xdotool, "mousemove", str(x), str(y), "click", "1")
    await _pump_until(
        app,
        lambda: icon.menu.isVisible() and _viewable(display, int(icon.menu.winId())),
        f"the menu opened for {label!r}",
    )
    action = icon.action(label)
    assert action.isEnabled(), f"{label!r} is disabled"
    rect = icon.action_rect(label)
    cx, cy = rect.center().x(), rect.center().y()
    await asyncio.to_thread(xdotool, "mousemove", str(cx), str(cy), "click", "1")
    await _pump_until(app, lambda: not icon.menu.isVisible(), f"{label!r} was chosen")


def _seen(states: list[TrayStatus], status: TrayStatus, icon: TrayIcon) -> None:
    states.append(status)
    icon.show()


async def test_every_menu_entry_through_the_docked_icon(
    xvfb: str, system_tray: None, qt_app: QApplication, x_display: Display, tmp_path: Path
) -> None:
    probe = ProbeApp.start(xvfb, tmp_path / "probe.jsonl")
    try:
        async with scripted_daemon(watching_script(probe.widgets["ok"].center)) as running:
            urls: list[str] = []
            states: list[TrayStatus] = []
            controller = TrayController(
                [ServerProfile("local", running.address)],
                lambda: open_backend("x11", display=xvfb),
                ask_task=ask_in_subprocess,
                open_path=print,
                open_url=urls.append,
                live_view_url="http://127.0.0.1:50080/",
                # No global hotkey, no fail-safe corner: the tray sits in a corner.
                session_options=SessionOptions(
                    safety=SafetySettings(emergency_stop=None, fail_safe=False)
                ),
                on_change=lambda status: _seen(states, status, icon),
            )
            icon = TrayIcon(controller)
            icon.start()
            try:
                docked = await asyncio.to_thread(wait_docked, x_display, APP_CLASS)
                # The tray sizes the window (trayer: 22x30); the icon inside is round.
                assert docked.width >= 16, docked
                assert docked.height >= 16, docked
                await _pump_until(
                    qt_app, lambda: painted_box(x_display, docked) is not None, "it painted"
                )
                assert_round(painted_box(x_display, docked), docked)

                status = icon.action(controller.status.title)
                assert not status.isEnabled()
                assert status.text() == "holodesk (local): idle"
                daemon_label = icon.action(f"Daemon: {running.address}")
                assert not daemon_label.isEnabled()
                assert not icon.action(menu.PAUSE).isEnabled()

                # Start task…: asks in the dialog, then runs the task on the desktop.
                await _click_entry(qt_app, x_display, icon, docked, menu.START)
                window = await dialog_window()
                await asyncio.to_thread(xdotool, "windowactivate", "--sync", window)
                await asyncio.to_thread(xdotool, "type", "press OK")
                await asyncio.to_thread(xdotool, "key", "Return")
                await _pump_until(qt_app, lambda: controller.status.step >= 2, "steps ran")
                assert controller.status.task == "press OK"
                assert await asyncio.to_thread(probe.wait_for_event, "command", widget="ok")

                await _click_entry(qt_app, x_display, icon, docked, menu.PAUSE)
                await _pump_until(
                    qt_app, lambda: controller.status.state is TrayState.PAUSED, "paused"
                )
                assert icon.action(menu.RESUME).isEnabled()
                paused_at = controller.status.step

                await _click_entry(qt_app, x_display, icon, docked, menu.RESUME)
                await _pump_until(
                    qt_app, lambda: controller.status.step > paused_at + 1, "resumed steps"
                )
                assert controller.status.state is TrayState.RUNNING

                await _click_entry(qt_app, x_display, icon, docked, menu.STOP)
                ended = await asyncio.to_thread(controller.wait_idle, GUARD_S)
                assert ended.state is TrayState.IDLE, ended
                assert ended.detail.startswith("cancelled"), ended
                assert "emergency stop from the tray" in ended.detail
                await _pump_until(
                    qt_app, lambda: icon.action(menu.START).isEnabled(), "the menu shows idle"
                )
                shown = [s.state for s in states]
                changes = [a for a, b in zip(shown, [None, *shown], strict=False) if a is not b]
                assert changes == [
                    TrayState.RUNNING,
                    TrayState.PAUSED,
                    TrayState.RUNNING,
                    TrayState.IDLE,
                ]

                await _click_entry(qt_app, x_display, icon, docked, menu.LIVE_VIEW)
                assert urls == ["http://127.0.0.1:50080/"]

                await _click_entry(qt_app, x_display, icon, docked, menu.QUIT)
                await asyncio.to_thread(wait_undocked, x_display, APP_CLASS)
            finally:
                icon.stop()
                qt_app.processEvents()
    finally:
        probe.stop()


def _menu_window(display: Display, pid: int) -> bool:
    """Whether a popup of process `pid` (its menu) is on the screen."""
    pid_atom = display.intern_atom("_NET_WM_PID")
    for window in display.screen().root.query_tree().children:
        attributes = window.get_attributes()
        if not attributes.override_redirect or attributes.map_state != X.IsViewable:
            continue
        prop = window.get_full_property(pid_atom, X.AnyPropertyType)
        if prop is not None and list(prop.value) == [pid]:
            return True
    return False


def test_the_tray_command_docks_and_opens_the_live_view_in_browser(
    xvfb: str, system_tray: None, x_display: Display, tmp_path: Path
) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> {opened}\n')
    browser.chmod(0o755)
    # The real command in its own process, as `holodesk service install` runs it.
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "holodesk.client", "tray"),
            *("--server", "lab=127.0.0.1:9", "--record-dir", str(tmp_path)),
            *("--live-view", "http://127.0.0.1:50999/sessions"),
        ],
        env={**os.environ, "DISPLAY": xvfb, "BROWSER": str(browser)},
        stderr=subprocess.PIPE,
        text=True,
    )
    err = ""
    try:
        try:
            docked = wait_docked(x_display, APP_CLASS)
            assert_round(_painted(x_display, docked), docked)
            # A right click opens the menu; its mnemonic picks Open live view.
            x, y = docked.center
            xdotool("mousemove", str(x), str(y), "click", "3")
            deadline = time.monotonic() + GUARD_S
            while not _menu_window(x_display, process.pid):
                assert process.poll() is None, "the tray exited"
                assert time.monotonic() < deadline, "the menu never opened"
                time.sleep(0.1)
            xdotool("key", "l")
            while not (opened.exists() and opened.read_text()):
                assert time.monotonic() < deadline, "the browser was never started"
                time.sleep(0.1)
            assert opened.read_text() == "http://127.0.0.1:50999/sessions\n"
            assert process.poll() is None
        finally:
            process.terminate()
            _, err = process.communicate(timeout=GUARD_S)
    except AssertionError as error:
        raise AssertionError(f"{error}\ntray's stderr:\n{err}") from error
    assert "Traceback" not in err, err


def test_the_icon_docks_into_a_tray_that_starts_after_it_and_again_after_a_restart(
    xvfb: str, x_display: Display, tmp_path: Path
) -> None:
    # At login the tray app may well start before the panel; panels restart too.
    wait_for_tray_owner(xvfb, owned=False)
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "holodesk.client", "tray"),
            *("--server", "lab=127.0.0.1:9", "--record-dir", str(tmp_path)),
        ],
        env={**os.environ, "DISPLAY": xvfb},
        stderr=subprocess.PIPE,
        text=True,
    )
    err = ""
    try:
        try:
            assert process.stderr is not None
            # Said once Qt has found no tray: the one started next comes after it.
            assert "no system tray yet" in process.stderr.readline()
            for _ in range(2):
                with trayer(xvfb):
                    docked = wait_docked(x_display, APP_CLASS)
                    assert_round(_painted(x_display, docked), docked)
            assert process.poll() is None
        finally:
            process.terminate()
            _, err = process.communicate(timeout=GUARD_S)
    except AssertionError as error:
        raise AssertionError(f"{error}\ntray's stderr:\n{err}") from error
    assert "Traceback" not in err, err


def _painted(display: Display, docked: Docked) -> tuple[int, int, int, int] | None:
    """What the icon painted, once it has (None if it never did)."""
    deadline = time.monotonic() + GUARD_S
    while (box := painted_box(display, docked)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    return box


def test_task_dialog_returns_what_the_user_typed(xvfb: str) -> None:
    answers: list[str | None] = []
    worker = threading.Thread(target=lambda: answers.append(ask_in_subprocess(3 * GUARD_S)))
    worker.start()
    window = asyncio.run(dialog_window())
    xdotool("windowactivate", "--sync", window)
    # Plain XTEST input to the focused dialog: with --window, xdotool sends the key's
    # release to a window the press already destroyed, leaving the key held (and
    # auto-repeating into later tests).
    xdotool("type", "open the report")
    xdotool("key", "Return")
    worker.join(GUARD_S)
    assert answers == ["open the report"]


def test_task_dialog_escape_is_no_task(xvfb: str) -> None:
    answers: list[str | None] = []
    worker = threading.Thread(target=lambda: answers.append(ask_in_subprocess(3 * GUARD_S)))
    worker.start()
    window = asyncio.run(dialog_window())
    xdotool("windowactivate", "--sync", window)
    xdotool("key", "Escape")
    worker.join(GUARD_S)
    assert answers == [None]
