"""The Windows backend: SendInput and per-monitor DPI geometry via ctypes, mss for capture.

The pure logic lives in `holodesk.platform.windows`; only `windows.user32` calls the
OS, and it is imported here only on Windows. Tests pass a fake `WinApi` as `api`.
"""

from __future__ import annotations

import sys

from holodesk.platform.base import Backend
from holodesk.platform.errors import BackendUnavailableError
from holodesk.platform.windows.api import WinApi
from holodesk.platform.windows.dpi import awareness_problems, enable_per_monitor_awareness
from holodesk.platform.windows.input import WinInput
from holodesk.platform.windows.screen import WinScreen


def create(api: WinApi | None = None) -> Backend:
    """Open the Windows backend (`api`: the OS calls, for tests; default the real ones)."""
    if api is None:
        if sys.platform != "win32":
            raise BackendUnavailableError(
                [
                    (
                        f"the win32 backend drives Windows and this is {sys.platform}",
                        "run the client on Windows, or choose this OS's backend "
                        "(unset HOLODESK_PLATFORM_BACKEND); tests can use the fake backend",
                    )
                ],
                backend="win32",
            )
        from holodesk.platform.windows.user32 import User32Api

        api = User32Api()
    # First, before any geometry or capture call: Windows fixes a process's DPI
    # awareness at its first use, and an unaware process sees scaled coordinates.
    awareness = enable_per_monitor_awareness(api)
    problems = awareness_problems(awareness, api.monitors())
    if problems:
        api.close()
        raise BackendUnavailableError(problems, backend="win32")
    return Backend(name="win32", os="windows", screen=WinScreen(api), input=WinInput(api))
