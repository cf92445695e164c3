"""The macOS backend: Quartz events (pyobjc) for input, mss for capture.

The pure logic lives in `holodesk.platform.macos`; only `macos.quartz_api` calls the
OS, and it is imported here only on macOS. Tests pass a fake `QuartzApi` as `api`.
"""

from __future__ import annotations

import importlib.util
import sys

from holodesk.platform.base import Backend
from holodesk.platform.errors import BackendUnavailableError
from holodesk.platform.macos.api import QuartzApi
from holodesk.platform.macos.input import MAX_TEXT_UNITS, QuartzInput
from holodesk.platform.macos.permissions import (
    SCREEN_RECORDING_PANE,
    HostProcess,
    permission_problems,
    responsible_app,
)
from holodesk.platform.macos.screen import QuartzScreen

# import name -> distribution, for the install hint
PYOBJC_MODULES: dict[str, str] = {
    "Quartz": "pyobjc-framework-Quartz",
    "ApplicationServices": "pyobjc-framework-ApplicationServices",
    "AppKit": "pyobjc-framework-Cocoa",
}


def missing_pyobjc() -> list[str]:
    """The pyobjc distributions this backend needs that are not installed."""
    return [
        dist for module, dist in PYOBJC_MODULES.items() if importlib.util.find_spec(module) is None
    ]


def create(
    api: QuartzApi | None = None,
    text_chunk_units: int = MAX_TEXT_UNITS,
    prompt: bool = True,
    host: HostProcess | None = None,
) -> Backend:
    """Open the macOS backend.

    `text_chunk_units`: UTF-16 units per typing event (2-20; lower it for an app that
    keeps only the first character of each event). `prompt`: when a permission is
    missing, show macOS's own prompt too (it also lists the app in System Settings).
    `api` and `host` are for tests: the OS calls, and the process asking.
    """
    if api is None:
        api = _real_api()
    process = host or HostProcess.current(sys.executable)
    screen_ok, trusted = api.screen_capture_allowed(), api.accessibility_trusted()
    problems = permission_problems(screen_ok, trusted, process)
    if problems:
        if prompt:
            api.request_access(screen_capture=not screen_ok, accessibility=not trusted)
        api.close()
        raise BackendUnavailableError(problems, backend="quartz")

    def permissions() -> list[tuple[str, str]]:
        return permission_problems(
            api.screen_capture_allowed(), api.accessibility_trusted(), process
        )

    return Backend(
        name="quartz",
        os="darwin",
        screen=QuartzScreen(api),
        input=QuartzInput(api, text_chunk_units=text_chunk_units),
        permission_check=permissions,
        # Without Screen Recording, macOS hands out the wallpaper or black, not an error.
        blank_capture_fix=(
            f"grant Screen Recording to {responsible_app(process).label} in "
            f"{SCREEN_RECORDING_PANE}, then restart it"
        ),
    )


def _real_api() -> QuartzApi:
    if sys.platform != "darwin":
        raise BackendUnavailableError(
            [
                (
                    f"the quartz backend drives macOS and this is {sys.platform}",
                    "run the client on a Mac, or choose this OS's backend "
                    "(unset HOLODESK_PLATFORM_BACKEND); tests can use the fake backend",
                )
            ],
            backend="quartz",
        )
    missing = missing_pyobjc()
    if missing:
        raise BackendUnavailableError(
            [
                (
                    f"pyobjc is not installed ({', '.join(missing)}), and the macOS backend "
                    "talks to Quartz through it",
                    f"install it: `pip install {' '.join(missing)}` (or `uv sync` in the "
                    "holodesk checkout, which installs it on macOS)",
                )
            ],
            backend="quartz",
        )
    from holodesk.platform.macos.quartz_api import PyObjCQuartzApi

    return PyObjCQuartzApi()
