"""Environment factories and reward functions named on a command line, for pools:
picklable objects (no closures), so that a RayPool sends them to its actors.

- `--app "COMMAND ..."`: XvfbCommand: a private Xvfb per environment, the command
  started on it (DISPLAY set) fresh for every rollout and stopped after it;
- `--url URL`: WebPage: a headless Chromium page per environment;
- `--vnc ADDRESS`: VncDesktop: the desktop a VNC server serves, one environment each;
- `--sandbox [IMAGE]`: Sandbox: a fresh sandbox container per rollout;
- `--environment MODULE:NAME`, `--reward MODULE:NAME`: load(): the caller's own
  factory (name -> Environment) or reward function. A RayPool's nodes import the
  module too, so it must be installed there (or on PYTHONPATH).
"""

from __future__ import annotations

import importlib
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from holodesk.client.rollouts.environments import (
    SandboxEnvironment,
    VncEnvironment,
    WebEnvironment,
    XvfbEnvironment,
)
from holodesk.client.rollouts.environments.sandbox import DEFAULT_IMAGE
from holodesk.platform.processes import stop_process


class LoadError(ValueError):
    """A MODULE:NAME that does not name a callable; the message says why."""


def load(spec: str, what: str) -> Any:
    """The callable `spec` ("package.module:name") names; `what` is for the message."""
    module_name, colon, name = spec.partition(":")
    if not colon or not module_name or not name:
        raise LoadError(f"{what} {spec!r}: write it as MODULE:NAME (e.g. mypkg.envs:make)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise LoadError(f"{what} {spec!r}: cannot import {module_name!r}: {error}") from error
    found: Any = module
    for part in name.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise LoadError(f"{what} {spec!r}: {module_name} has no {name!r}")
    if not callable(found):
        raise LoadError(f"{what} {spec!r}: {name} is not callable")
    return found


class _RunningCommand:
    def __init__(self, argv: Sequence[str], display: str) -> None:
        self._process = subprocess.Popen(
            list(argv), env={**os.environ, "DISPLAY": display}, stdin=subprocess.DEVNULL
        )

    def __enter__(self) -> _RunningCommand:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stop_process(self._process, timeout_s=10.0)


@dataclass(frozen=True)
class CommandApp:
    """An AppFactory: runs `argv` on the display it is given."""

    argv: tuple[str, ...]

    def __call__(self, display: str) -> _RunningCommand:
        return _RunningCommand(self.argv, display)


@dataclass(frozen=True)
class XvfbCommand:
    """An environment factory: XvfbEnvironment(CommandApp(argv)) named as asked."""

    argv: tuple[str, ...]
    width: int = 1280
    height: int = 800

    def __call__(self, name: str) -> XvfbEnvironment:
        app = CommandApp(self.argv) if self.argv else None
        return XvfbEnvironment(app, width=self.width, height=self.height, name=name)


@dataclass(frozen=True)
class WebPage:
    """An environment factory: a WebEnvironment at `url` (a task's own url wins)."""

    url: str
    width: int = 1280
    height: int = 800

    def __call__(self, name: str) -> WebEnvironment:
        return WebEnvironment(self.url, width=self.width, height=self.height, name=name)


@dataclass(frozen=True)
class VncDesktop:
    """An environment factory: a VncEnvironment on `server`, `reset_command` run
    before every rollout. The password is read where the pool is made and travels
    with the factory (to a Ray actor: through Ray's object store)."""

    server: str
    password: str | None = field(default=None, repr=False)
    reset_command: tuple[str, ...] = ()

    def __call__(self, name: str) -> VncEnvironment:
        return VncEnvironment(
            self.server, password=self.password, reset_command=self.reset_command, name=name
        )


@dataclass(frozen=True)
class Sandbox:
    """An environment factory: a SandboxEnvironment of `image` (a fresh container
    per rollout) with `apps` on its desktop, through `runtime` (None: found on the
    node that runs it)."""

    image: str = DEFAULT_IMAGE
    apps: str | None = None
    width: int = 1280
    height: int = 800
    runtime: str | None = None

    def __call__(self, name: str) -> SandboxEnvironment:
        return SandboxEnvironment(
            self.image,
            apps=self.apps,
            width=self.width,
            height=self.height,
            runtime=self.runtime,
            name=name,
        )
