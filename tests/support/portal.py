"""Run tests/support/portal_standin.py in a subprocess, and read what it logged."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from jeepney import DBusAddress, new_method_call  # type: ignore[import-untyped]
from jeepney.io.blocking import open_dbus_connection  # type: ignore[import-untyped]

from holodesk.platform.processes import stop_process
from tests.support.portal_standin import CONTROL, PORTAL_NAME, PORTAL_PATH
from tests.support.probe import Event, read_json_lines

REPO_ROOT = Path(__file__).resolve().parent.parent.parent

Entry = Event


class PortalStandin:
    """One stand-in portal process on a bus, driving one X display."""

    def __init__(self, process: subprocess.Popen[str], address: str, log_path: Path) -> None:
        self._process = process
        self.address = address
        self.log_path = log_path

    @classmethod
    def start(
        cls,
        address: str,
        display: str,
        workdir: Path,
        *,
        consent: str = "allow",
        screenshot: str = "allow",
        remote_desktop: bool = True,
        screencast: bool = True,
        monitors: Sequence[tuple[int, int, int, int]] = (),
        scale: int = 1,
    ) -> PortalStandin:
        """Start it and wait until it owns the portal's bus name."""
        log_path = workdir / "portal.log"
        # A space in the folder: the portal's file URIs must be decoded, not just cut.
        screenshots = workdir / "Screenshot folder"
        screenshots.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "tests.support.portal_standin",
            f"--address={address}",
            f"--display={display}",
            f"--log={log_path}",
            f"--screenshot-dir={screenshots}",
            f"--consent={consent}",
            f"--screenshot={screenshot}",
            f"--scale={scale}",
            *(["--no-remote-desktop"] if not remote_desktop else []),
            *(["--no-screencast"] if not screencast else []),
            *(f"--monitor={x},{y},{w},{h}" for x, y, w, h in monitors),
        ]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DISPLAY": display}
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT
        )
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if line != "ready":
            process.kill()
            raise RuntimeError(f"the stand-in portal did not start (exit {process.wait()})")
        return cls(process, address, log_path)

    @property
    def screenshot_dir(self) -> Path:
        return self.log_path.parent / "Screenshot folder"

    def entries(self) -> list[Entry]:
        """Everything logged so far: calls, responses, consent and start events, errors."""
        return read_json_lines(self.log_path)

    def calls(self, name: str) -> list[Entry]:
        """The logged calls of one method, e.g. "RemoteDesktop.SelectDevices"."""
        return [e for e in self.entries() if e.get("call") == name and "error" not in e]

    def events(self, kind: str) -> list[Entry]:
        return [e for e in self.entries() if e.get("event") == kind]

    def close_sessions(self) -> None:
        """End every session from the portal's side, as "Stop sharing" would."""
        connection = open_dbus_connection(bus=self.address)
        try:
            call = new_method_call(
                DBusAddress(PORTAL_PATH, bus_name=PORTAL_NAME, interface=CONTROL), "CloseSessions"
            )
            connection.send_and_get_reply(call, timeout=10)
        finally:
            connection.close()

    def stop(self) -> None:
        stop_process(self._process)
        if self._process.stdout is not None:
            self._process.stdout.close()
