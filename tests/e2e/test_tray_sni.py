"""`holodesk tray` under a StatusNotifierItem desktop: with the real watcher on the
session bus and a host registered (what KDE's, GNOME's AppIndicator, XFCE's and
waybar's trays are), Qt's icon registers as an item instead of docking by XEmbed,
and every entry of its exported com.canonical.dbusmenu does its job when picked with
the Event call a panel makes: against a real daemon on 127.0.0.1, through the real
command in its own process, its task typed into the real dialog.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from jeepney import DBusAddress  # type: ignore[import-untyped]

from holodesk.client.tray import menu
from tests.support.sni_host import SniHost, sni_host
from tests.support.system_tray import GUARD_S, dialog_window, xdotool
from tests.support.tray_daemon import scripted_daemon, watching_script

pytestmark = [pytest.mark.x11, pytest.mark.e2e]
LIVE_VIEW = "http://127.0.0.1:50999/sessions"


@pytest.fixture
def host(xvfb: str) -> Iterator[SniHost]:
    with sni_host() as found:
        yield found


async def _until(what: str, condition: Callable[[], Any]) -> Any:
    """Polls `condition` (a blocking D-Bus read) until it returns something true."""
    deadline = time.monotonic() + GUARD_S
    while True:
        value = await asyncio.to_thread(condition)
        if value:
            return value
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.1)


def _tooltip(host: SniHost, item: DBusAddress) -> str:
    # ToolTip is (icon name, icon pixmaps, title, text): the tray's status line.
    return str(host.properties(item)["ToolTip"][2])


async def test_every_menu_entry_over_status_notifier_item(
    xvfb: str, host: SniHost, tmp_path: Path
) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> {opened}\n')
    browser.chmod(0o755)
    # Away from every corner: the session's fail-safe stops at a pointer in one.
    xdotool("mousemove", "640", "400")
    async with scripted_daemon(watching_script()) as running:
        address = f"127.0.0.1:{running.port}"
        process = _start_tray(xvfb, host, address, browser, tmp_path / "records")
        err = ""
        try:
            try:
                await _scenario(host, address, opened, process)
            finally:
                if process.poll() is None:
                    process.terminate()
                _, err = await asyncio.to_thread(process.communicate, timeout=GUARD_S)
        except AssertionError as error:
            raise AssertionError(f"{error}\ntray's stderr:\n{err}") from error
    assert process.returncode == 0, err
    assert "Traceback" not in err, err


def _start_tray(
    display: str, host: SniHost, address: str, browser: Path, records: Path
) -> subprocess.Popen[str]:
    """The real command in its own process, as `holodesk service install` runs it."""
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "holodesk.client", "tray"),
            *("--server", f"lab={address}", "--record-dir", str(records)),
            *("--live-view", LIVE_VIEW),
        ],
        env={
            **os.environ,
            "DISPLAY": display,
            "DBUS_SESSION_BUS_ADDRESS": host.address,
            "BROWSER": str(browser),
        },
        stderr=subprocess.PIPE,
        text=True,
    )


async def _scenario(
    host: SniHost, address: str, opened: Path, process: subprocess.Popen[str]
) -> None:
    item = await asyncio.to_thread(host.wait_for_item)
    properties = await asyncio.to_thread(host.properties, item)
    assert properties["Id"] == "holodesk"
    assert properties["Status"] == "Active"
    pixmaps = properties["IconPixmap"]
    assert pixmaps, "the item has no icon"
    assert all(width == height for width, height, _ in pixmaps), "a stretched icon"
    assert _tooltip(host, item) == "holodesk (lab): idle"

    entries = await asyncio.to_thread(host.menu, item)
    assert [(e.text, e.enabled) for e in entries] == [
        ("holodesk (lab): idle", False),
        (f"Daemon: {address}", False),
        (menu.START, True),
        (menu.PAUSE, False),
        (menu.RESUME, False),
        (menu.STOP, False),
        (menu.LIVE_VIEW, True),
        (menu.LAST_REPORT, False),
        ("Server: lab", True),
        (menu.QUIT, True),
    ]
    assert entries[8].toggle == "radio"

    await asyncio.to_thread(host.click, item, menu.LIVE_VIEW)
    await _until("the browser opened", lambda: opened.exists() and opened.read_text())
    assert await asyncio.to_thread(opened.read_text) == f"{LIVE_VIEW}\n"

    await asyncio.to_thread(host.click, item, menu.START)
    window = await dialog_window()
    await asyncio.to_thread(xdotool, "windowactivate", "--sync", window)
    await asyncio.to_thread(xdotool, "type", "watch the screen")
    await asyncio.to_thread(xdotool, "key", "Return")
    await _until("it ran steps", lambda: "running step" in _tooltip(host, item))
    assert not (await asyncio.to_thread(host.entry, item, menu.START)).enabled

    await asyncio.to_thread(host.click, item, menu.PAUSE)
    await _until("it paused", lambda: "paused at step" in _tooltip(host, item))
    assert (await asyncio.to_thread(host.entry, item, menu.RESUME)).enabled

    await asyncio.to_thread(host.click, item, menu.RESUME)
    await _until("it resumed", lambda: "running step" in _tooltip(host, item))

    await asyncio.to_thread(host.click, item, menu.STOP)
    stopped = await _until("it stopped", lambda: "idle" in (t := _tooltip(host, item)) and t)
    assert stopped == "holodesk (lab): idle: cancelled: emergency stop from the tray"
    assert (await asyncio.to_thread(host.entry, item, menu.START)).enabled

    await asyncio.to_thread(host.click, item, menu.QUIT)
    await asyncio.to_thread(process.wait, GUARD_S)
    await _until("the item went", lambda: not host.items())
