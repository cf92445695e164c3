"""What a task's steps and getters act on: its display, HOME, cache folder, the
processes it owns and its Chromium's DevTools port.

One TaskContext per run of a task, made by the environment at reset (environment.py)
and dropped with it; steps, getters and metrics never reach the environment itself,
so any environment that can make a TaskContext (an in-process Xvfb, a Ray actor's)
runs the same tasks."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from holodesk.client.eval.tasks.home import expand_command, expand_path
from holodesk.client.eval.tasks.processes import OwnedProcesses, Ran

# Dropped from the environment's processes: with them unset, apps keep their
# settings, data and caches under the task's HOME.
CLIENT_PASSWORD = "password"
_XDG_HOMES = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")


class StepError(Exception):
    """A set-up step could not do what it says; the message says why."""


@dataclass
class TaskContext:
    """`display` the X display (":N"); `home` the task's HOME; `cache` where getters
    copy files (OSWorld's cache dir); `task_folder` the task file's folder (relative
    paths of `download` and `cloud_file`); `bus` the D-Bus session address ("" when
    none). `devtools_port` is set once a Chromium of the task is running."""

    display: str
    home: Path
    cache: Path
    task_folder: Path
    processes: OwnedProcesses
    width: int = 1280
    height: int = 800
    bus: str = ""
    # The task's XDG_RUNTIME_DIR (sockets, dconf's runtime files); None: the caller's.
    runtime_dir: Path | None = None
    devtools_port: int | None = None
    # The Chromium profile folder (its DevToolsActivePort file tells the port).
    chromium_profile: Path | None = None
    base_env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    def env(self) -> dict[str, str]:
        """The variables every process of the task runs with."""
        env = {k: v for k, v in self.base_env.items() if k not in _XDG_HOMES}
        env["HOME"] = str(self.home)
        env["DISPLAY"] = self.display
        env.pop("WAYLAND_DISPLAY", None)
        if self.runtime_dir is not None:
            env["XDG_RUNTIME_DIR"] = str(self.runtime_dir)
        if self.bus:
            env["DBUS_SESSION_BUS_ADDRESS"] = self.bus
        else:
            env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        return env

    def path(self, path: str) -> Path:
        """A task's path on this host (the home convention: home.py)."""
        return expand_path(path, self.home)

    def placeholders(self) -> dict[str, str]:
        """OSWorld's placeholders in commands, with this environment's values (its
        client password is that of its local VMs)."""
        return {
            "{SCREEN_WIDTH_HALF}": str(self.width // 2),
            "{SCREEN_HEIGHT_HALF}": str(self.height // 2),
            "{SCREEN_WIDTH}": str(self.width),
            "{SCREEN_HEIGHT}": str(self.height),
            "{CLIENT_PASSWORD}": CLIENT_PASSWORD,
        }

    def command(self, command: str | Sequence[str], *, shell: bool = False) -> str | list[str]:
        """The command with the home and OSWorld's placeholders rewritten; without a
        shell, a string is split into its words as a shell would (OSWorld's server does
        the same)."""
        expanded = expand_command(command, self.home)
        for name, value in self.placeholders().items():
            if isinstance(expanded, str):
                expanded = expanded.replace(name, value)
            else:
                expanded = [word.replace(name, value) for word in expanded]
        if isinstance(expanded, str) and not shell:
            return shlex.split(expanded)
        return expanded

    def start(self, command: str | Sequence[str], *, shell: bool = False) -> None:
        """Start a process the environment owns (killed at reset and close)."""
        self.processes.start(
            self.command(command, shell=shell), shell=shell, env=self.env(), cwd=self.home
        )

    def run(self, command: str | Sequence[str], *, shell: bool = False, timeout_s: float) -> Ran:
        """Run a command to its end, as the task's user would in its HOME."""
        return self.processes.run(
            self.command(command, shell=shell),
            shell=shell,
            env=self.env(),
            cwd=self.home,
            timeout_s=timeout_s,
        )
