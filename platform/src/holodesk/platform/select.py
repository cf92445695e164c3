"""Choose and open a platform backend: the one place that knows them all.

Backends are imported lazily by module name, so the interface (`base`) never
imports an implementation and an OS-only dependency is only needed on its OS. A
backend's module lives with the rest of its story, in its own folder (`x11/`,
`wayland/`, `wlroots/`, `vnc/`, `web/`, `windows/`, `macos/`); `backends/` holds the
fake one for tests. Which one a Linux session gets is `wayland.choice`'s rule.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

from holodesk.platform import preflight
from holodesk.platform.backend_env import BACKEND_ENV
from holodesk.platform.base import Backend
from holodesk.platform.errors import BackendUnavailableError

if TYPE_CHECKING:
    from holodesk.platform.wayland.choice import SessionChoice

ENV_VAR = BACKEND_ENV
Problem = tuple[str, str]
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
# Where the desktop session (X11 or Wayland) decides the backend.
_SESSION_PLATFORMS = ("linux", "freebsd", "openbsd", "netbsd")
_NAME = re.compile(r"[a-z][a-z0-9_]*")


def default_backend_name(platform: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The backend for an OS (`sys.platform` spelling), or None.

    On Linux and the BSDs the session decides (`holodesk.platform.wayland.choice`):
    a Wayland session gets wlroots where its compositor offers the wlroots
    protocols (sway, Hyprland, river), else wayland (the portal, else uinput),
    XWayland's DISPLAY or not: x11 would reach X11 apps only. x11 without one.
    """
    choice = session_choice(platform, environ or {})
    if choice is not None:
        return choice.backend
    return _BY_PLATFORM.get(platform)


def session_choice(platform: str, environ: Mapping[str, str]) -> SessionChoice | None:
    """Why a Linux or BSD session gets its backend (None on other OSes): for errors
    and `holodesk doctor`, which say the same choice."""
    if not platform.startswith(_SESSION_PLATFORMS):
        return None
    from holodesk.platform.wayland.choice import choose

    return choose(environ)


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
    """Open a backend: `name`, else $HOLODESK_PLATFORM_BACKEND, else the OS's own.

    When the OS's own is chosen on a Linux session and cannot open, the error lists
    every route: those passed over on the way, the chosen one's causes, and what
    else could be chosen, each with its fix (`SessionChoice.explain`).
    """
    from_env = name is None and bool(os.environ.get(ENV_VAR, "").strip())
    choice = None if name is not None or from_env else session_choice(sys.platform, os.environ)
    chosen = choice.backend if choice is not None else chosen_backend_name(name)
    origin = f" (set by {ENV_VAR})" if from_env else ""
    if chosen not in available_backends():
        raise BackendUnavailableError(
            [(f"there is no platform backend named {chosen!r}{origin}", _choose_fix())],
            backend=chosen,
        )
    found = preflight.problems(chosen, options, os.environ)
    if found:
        raise BackendUnavailableError(_explained(choice, found), backend=chosen)
    try:
        return _create(chosen, options)
    except BackendUnavailableError as error:
        every = _explained(choice, error.causes)
        if every == error.causes:
            raise
        raise BackendUnavailableError(every, backend=chosen) from error


def _explained(choice: SessionChoice | None, causes: list[Problem]) -> list[Problem]:
    return causes if choice is None else choice.explain(causes)


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
