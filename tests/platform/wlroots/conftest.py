"""Fixtures for the wlroots backend: a real headless sway, a native Wayland app (GTK 3,
tests/apps/gtk_conformance_app.py) and the Tk probe app on its XWayland.

Input comes the way every app's does on sway: from the compositor's seat, which our
virtual pointer and keyboard feed (for the Tk probe, XWayland turns it into X
events). Where sway or GTK cannot start, the fixture fails with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.platform.base import Region
from holodesk.platform.select import open_backend
from tests.platform.wlroots.gtk_probe import GtkProbe, GtkUnavailableError
from tests.platform.wlroots.gtk_target import GtkTarget, start_app
from tests.platform.wlroots.sway import Sway, SwayUnavailableError
from tests.support.probe import ProbeApp


def start_sway(**options: object) -> Sway:
    """Sway.start, failing the test (never skipping it) when sway cannot start here."""
    try:
        return Sway.start(**options)  # type: ignore[arg-type]
    except SwayUnavailableError as error:
        pytest.fail(f"headless sway cannot start here: {error}")


# The output is exactly the probe window (placed at its origin): with sway 1.7, once
# the pointer has crossed the bare desktop and come back, XWayland windows get its
# motion but no more button events (native Wayland windows get both), so the
# pointer must never leave the window; the off-screen checks still reach every edge.
PROBE_OUTPUT = ("output HEADLESS-1 resolution 600x400 position 0,0",)


@pytest.fixture(scope="module")
def sway() -> Iterator[Sway]:
    """One headless sway per test module: one output, the probe window's size, at scale 1."""
    running = start_sway(outputs=PROBE_OUTPUT, window_position=(0, 0))
    yield running
    running.stop()


# An X11 window under every probe, for the life of the module: between one probe
# closing and the next mapping, the pointer then rests on an XWayland window, never
# on bare desktop (see PROBE_OUTPUT).
BACKDROP = (
    "import tkinter; root = tkinter.Tk(className='HolodeskBackdrop'); "
    "root.geometry('600x400+0+0'); root.mainloop()"
)


@pytest.fixture(scope="module")
def backdrop(sway: Sway) -> Iterator[None]:
    process = subprocess.Popen(
        [sys.executable, "-c", BACKDROP], env={**os.environ, "DISPLAY": sway.x_display}
    )
    deadline = time.monotonic() + 20
    while not _has_window(sway, "Holodeskbackdrop"):  # Tk capitalises the first letter only
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail("the backdrop window did not appear on sway's XWayland")
        time.sleep(0.05)
    yield
    process.terminate()
    process.wait(timeout=5)


def _has_window(sway: Sway, x_class: str) -> bool:
    pending = [sway.msg("-t", "get_tree")]
    while pending:
        node = pending.pop()
        if (node.get("window_properties") or {}).get("class") == x_class:
            return True
        pending.extend(node.get("nodes", []) + node.get("floating_nodes", []))
    return False


@pytest.fixture
def sway_probe(sway: Sway, backdrop: None, tmp_path: Path) -> Iterator[ProbeApp]:
    """A fresh probe window on sway's XWayland, focused (sway focuses a new window)."""
    app = ProbeApp.start(sway.x_display, tmp_path / "probe.log", x=0, y=0)
    yield app
    app.stop()


# The native app's window: the whole output (PROBE_OUTPUT), so every point the
# conformance suite aims at, the screen's last pixel too, is on it.
NATIVE_WINDOW = Region(0, 0, 600, 400)


@pytest.fixture
def native_app(sway: Sway, tmp_path: Path) -> Iterator[GtkProbe]:
    """A fresh window of the GTK conformance app, native on sway, focused."""
    try:
        app = start_app(sway, tmp_path / "gtk.log", NATIVE_WINDOW)
    except GtkUnavailableError as error:
        pytest.fail(f"the native Wayland app cannot run here: {error}")
    yield app
    app.stop()


@pytest.fixture
def native_target(sway: Sway, native_app: GtkProbe) -> Iterator[GtkTarget]:
    with GtkTarget.open(
        lambda: open_backend("wlroots", socket=sway.wayland_socket), native_app
    ) as opened:
        yield opened
