"""Choose and open a platform backend: the one place that knows them all.

Backends are imported lazily by module name, so the interface (`base`) never
imports an implementation and an OS-only dependency is only needed on its OS. A
backend's module lives with the rest of its story, in its own folder (`x11/`,
`vnc/`, `web/`, `windows/`, `macos/`); `backends/` holds the fake one for tests and
those not yet moved (wayland, wlroots).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, cast

from holodesk.platform import preflight
from holodesk.platform.base import Backend
from holodesk.platform.errors import BackendUnavailableError

ENV_VAR = "HOLODESK_PLATFORM_BACKEND"
# Every backend name, with the module whose `create(**options) -> Backend` opens it.
BACKEND_MODULES: Mapping[str, str] = MappingProxyType(
    {
        "fake": "holodesk.platform.backends.fake",
        "quartz": "holodesk.platform.macos.backend",
        "vnc": "holodesk.platform.vnc.backend",
        "wayland": "holodesk.platform.wayland.backend",
        "web": "holodesk.platform.web.backend",
        "win32": "holodesk.platform.windows.backend",
        "wlroots": "holodesk.platform.wlroots.backend",
        "x11": "holodesk.platform.x11.backend",
    }
)

_BY_PLATFORM: dict[str, str] = {"linux": "x11", "darwin": "quartz", "win32": "win32"}
_NAME = re.compile(r"[a-z][a-z0-9_]*")


def default_backend_name(platform: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The backend for an OS (`sys.platform` spelling), or None.

    On Linux and the BSDs, a Wayland session whose compositor offers the wlroots
    protocols (sway, Hyprland, river: screencopy, virtual pointer and keyboard) gets
    the wlroots backend, XWayland or not (x11 would reach X11 apps only); another
    Wayland session without an X server (WAYLAND_DISPLAY set, DISPLAY not) gets the
    wayland backend; with XWayland's DISPLAY, x11.
    """
    if platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        env = environ or {}
        if env.get("WAYLAND_DISPLAY", "").strip():
            from holodesk.platform.wlroots.probe import offers_wlroots_protocols

            if offers_wlroots_protocols(env):
                return "wlroots"
            if not env.get("DISPLAY", "").strip():
                return "wayland"
        return "x11"
    return _BY_PLATFORM.get(platform)


def resolve_backend_name(name: str | None, environ: Mapping[str, str], platform: str) -> str:
    """Explicit name, else the environment override, else the OS default."""
    source = f"backend name {name!r}"
    if name is None and environ.get(ENV_VAR, "").strip():
        name = environ[ENV_VAR]
        source = f"{ENV_VAR}={name!r}"
    if name is None:
        default = default_backend_name(platform, environ)
        if default is None:
            raise BackendUnavailableError(
                [
                    (
                        f"holodesk has no backend for this OS (sys.platform={platform!r})",
                        f"choose one explicitly with {ENV_VAR}, one of: "
                        f"{', '.join(available_backends())}",
                    )
                ]
            )
        return default
    normalized = name.strip().lower()
    if not _NAME.fullmatch(normalized):
        raise BackendUnavailableError([(f"{source} is not a backend name", _choose_fix())])
    return normalized


def chosen_backend_name(name: str | None = None) -> str:
    """The backend `open_backend(name)` would open, without opening it: callers that
    shape a backend's options ask here rather than check the OS themselves."""
    return resolve_backend_name(name, os.environ, sys.platform)


def available_backends() -> list[str]:
    """Names of the backends this platform layer has."""
    return sorted(BACKEND_MODULES)


def open_backend(name: str | None = None, **options: Any) -> Backend:
    """Open a backend: `name`, else $HOLODESK_PLATFORM_BACKEND, else the OS's own."""
    chosen = chosen_backend_name(name)
    from_env = name is None and bool(os.environ.get(ENV_VAR, "").strip())
    origin = f" (set by {ENV_VAR})" if from_env else ""
    if chosen not in available_backends():
        raise BackendUnavailableError(
            [(f"there is no platform backend named {chosen!r}{origin}", _choose_fix())],
            backend=chosen,
        )
    found = preflight.problems(chosen, options, os.environ)
    if found:
        raise BackendUnavailableError(found, backend=chosen)
    return _create(chosen, options)


def _create(name: str, options: Mapping[str, Any]) -> Backend:
    module_name = BACKEND_MODULES[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise BackendUnavailableError(
            [
                (
                    f"importing {module_name} failed: {error}",
                    f"install what it needs (`uv sync`, or `pip install {error.name or '...'}`)",
                )
            ],
            backend=name,
        ) from error
    create = cast("Callable[..., Backend]", module.create)
    return create(**options)


def _choose_fix() -> str:
    return f"use one of {', '.join(available_backends())} (pass it, or set {ENV_VAR})"
