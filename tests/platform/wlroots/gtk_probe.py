"""The native Wayland probe (tests/apps/gtk_probe_app.py) on a headless sway, placed by sway.

GTK on Wayland knows only surface-local coordinates, so where the window sits in
the compositor's logical layout is asked of sway (its tree), after sway was told
to float it at a given logical rectangle.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from holodesk.platform.base import Region
from tests.platform.wlroots.sway import Sway
from tests.support.probe import Event, read_json_lines

APP = Path(__file__).resolve().parents[2] / "apps" / "gtk_probe_app.py"
APP_ID = "holodesk-gtk-probe"
SYSTEM_PYTHON = "/usr/bin/python3"
INSTALL_FIX = "apt-get install python3-gi gir1.2-gtk-3.0 (tools/setup.sh does)"
TIMEOUT_S = 20.0


class GtkUnavailableError(RuntimeError):
    """The GTK probe cannot run here; the message says why."""


@dataclass
class GtkProbe:
    """A running GTK probe window and where sway put it (logical pixels)."""

    process: subprocess.Popen[bytes]
    log_path: Path
    runtime_dir: Path
    window: Region
    app_id: str = APP_ID

    @classmethod
    def start(
        cls, sway: Sway, log_path: Path, window: Region, app: Path = APP, app_id: str = APP_ID
    ) -> GtkProbe:
        """Start `app` (a GTK app taking its log's path, whose app id is `app_id`) on
        sway, wait for its ready record, and have sway float it at `window`."""
        check = subprocess.run(
            [SYSTEM_PYTHON, "-c", "import gi; gi.require_version('Gtk', '3.0')"],
            capture_output=True,
            check=False,
        )
        if check.returncode != 0:
            raise GtkUnavailableError(f"GTK 3 for Python is missing: {INSTALL_FIX}")
        log_path.write_text("")
        runtime = Path(tempfile.mkdtemp(prefix="holodesk-gtk-"))
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(runtime),
            "XDG_RUNTIME_DIR": str(runtime),
            "WAYLAND_DISPLAY": sway.wayland_socket,
            "GDK_BACKEND": "wayland",
            "NO_AT_BRIDGE": "1",
        }
        process = subprocess.Popen([SYSTEM_PYTHON, str(app), str(log_path)], env=env)
        probe = cls(process, log_path, runtime, window, app_id)
        try:
            probe.wait(lambda: probe.events("ready"), "the ready record")
            probe.place(sway, window)
        except BaseException:
            probe.stop()
            raise
        return probe

    def place(self, sway: Sway, window: Region) -> None:
        """Float the window at `window` (logical) and wait until sway has it there."""
        pid, app_id = self.process.pid, self.app_id
        self.wait(lambda: _view_rect(sway, pid, app_id) is not None, "sway to map the window")
        command = (
            f"[pid={pid}] floating enable, resize set {window.width} {window.height}, "
            f"move absolute position {window.x} {window.y}"
        )
        # Asked again while it is not there: under load, sway 1.7 sometimes leaves a
        # window just mapped where it was (the command succeeds, nothing moves).
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            sway.command(command)
            try:
                self.wait(lambda: _view_rect(sway, pid, app_id) == window, "placement", timeout_s=2)
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    where = _view_rect(sway, pid, app_id)
                    raise AssertionError(
                        f"sway did not place the window at {window}: {where}"
                    ) from None
        self.window = window
        time.sleep(0.3)  # GTK's answer to the configure: the new size drawn

    def events(self, kind: str | None = None) -> list[Event]:
        return [e for e in read_json_lines(self.log_path) if kind is None or e["type"] == kind]

    def wait(self, done: Any, what: str, timeout_s: float = TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            if self.process.poll() is not None:
                raise GtkUnavailableError(f"the GTK probe exited with {self.process.returncode}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}: {self.events()[-5:]}")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        shutil.rmtree(self.runtime_dir, ignore_errors=True)


def _view_rect(sway: Sway, pid: int, app_id: str) -> Region | None:
    """Where sway shows this probe's window (logical), or None before it maps (by
    pid: the previous test's window may not be gone yet)."""
    pending = [sway.msg("-t", "get_tree")]
    while pending:
        node = pending.pop()
        if node.get("app_id") == app_id and node.get("pid") == pid:
            rect = node["rect"]
            return Region(rect["x"], rect["y"], rect["width"], rect["height"])
        pending.extend(node.get("nodes", []) + node.get("floating_nodes", []))
    return None
