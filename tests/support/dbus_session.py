"""A private D-Bus session bus for tests (dbus-daemon, Debian package dbus)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from holodesk.platform.processes import stop_process

# No <servicedir>: nothing is ever activated on demand, so a test that starts
# no portal really has none (a system's xdg-desktop-portal stays out of it).
_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={directory}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def dbus_daemon() -> str | None:
    """The dbus-daemon executable, or None when it is not installed."""
    return shutil.which("dbus-daemon")


@contextlib.contextmanager
def private_session_bus() -> Iterator[str]:
    """Yield the address of a fresh session bus; stop it afterwards."""
    executable = dbus_daemon()
    if executable is None:
        raise RuntimeError("dbus-daemon is not installed: apt-get install dbus")
    with tempfile.TemporaryDirectory(prefix="holodesk-bus-") as directory:
        config = Path(directory) / "session.conf"
        config.write_text(_CONFIG.format(directory=directory))
        process = subprocess.Popen(
            [executable, f"--config-file={config}", "--nofork", "--print-address=1"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            # Printed once the bus listens: no readiness poll needed.
            address = process.stdout.readline().strip()
            if not address:
                raise RuntimeError(f"dbus-daemon exited with {process.wait()} before listening")
            yield address
        finally:
            stop_process(process)
