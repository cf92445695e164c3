"""macOS: a LaunchAgent in the user's Aqua (GUI) session."""

from __future__ import annotations

import os
import plistlib
import re
from pathlib import Path

from holodesk.platform.services.rollback import (
    installing,
    missing_directories,
    remove_if_empty,
)
from holodesk.platform.services.runner import (
    CommandRunner,
    ServiceError,
    check,
    run_command,
)
from holodesk.platform.services.spec import ServiceSpec, ServiceStatus


def render_plist(spec: ServiceSpec, log_dir: Path) -> bytes:
    agent = {
        "Label": spec.launchd_label,
        "ProgramArguments": list(spec.argv),
        "RunAtLoad": True,
        # Restart after a crash, not after a deliberate quit from the tray menu.
        "KeepAlive": {"SuccessfulExit": False},
        # Only in a logged-in GUI session: capture and input need the window server.
        "LimitLoadToSessionType": "Aqua",
        "ProcessType": "Interactive",
        "ThrottleInterval": 10,
        "StandardOutPath": str(log_dir / f"{spec.name}.log"),
        "StandardErrorPath": str(log_dir / f"{spec.name}.log"),
    }
    return plistlib.dumps(agent, sort_keys=False)


class LaunchdManager:
    kind = "launchd LaunchAgent"

    def __init__(
        self,
        *,
        home: Path | None = None,
        uid: int | None = None,
        runner: CommandRunner = run_command,
    ) -> None:
        self._home = home or Path.home()
        getuid = getattr(os, "getuid", None)
        self._uid = uid if uid is not None else (getuid() if getuid else 0)
        self._run = runner

    @property
    def _domain(self) -> str:
        return f"gui/{self._uid}"

    def plist_path(self, name: str) -> Path:
        label = ServiceSpec(name, "", ("x",)).launchd_label
        return self._home / "Library" / "LaunchAgents" / f"{label}.plist"

    def render(self, spec: ServiceSpec) -> str:
        return render_plist(spec, self._log_dir).decode()

    @property
    def _log_dir(self) -> Path:
        return self._home / "Library" / "Logs" / "holodesk"

    def install(self, spec: ServiceSpec) -> Path:
        path = self.plist_path(spec.name)
        made_logs = missing_directories(self._log_dir)
        self._log_dir.mkdir(parents=True, exist_ok=True)
        bootstrap = ("launchctl", "bootstrap", self._domain, str(path))

        def undo(replaced: bool) -> None:
            remove_if_empty(made_logs)
            if replaced:  # the agent this one replaced was booted out: load it again
                self._run(bootstrap)

        with installing(path, render_plist(spec, self._log_dir), undo):
            # Replacing a loaded agent: bootout first (fails harmlessly when not loaded).
            self._run(("launchctl", "bootout", f"{self._domain}/{spec.launchd_label}"))
            check(self._run(bootstrap), bootstrap, _FIX)
        return path

    def uninstall(self, name: str) -> None:
        path = self.plist_path(name)
        if not path.exists():
            raise ServiceError(f"{name} is not installed ({path} does not exist)")
        label = ServiceSpec(name, "", ("x",)).launchd_label
        self._run(("launchctl", "bootout", f"{self._domain}/{label}"))
        path.unlink()

    def status(self, name: str) -> ServiceStatus:
        path = self.plist_path(name)
        if not path.exists():
            return ServiceStatus(installed=False, running=False, detail="not installed")
        label = ServiceSpec(name, "", ("x",)).launchd_label
        result = self._run(("launchctl", "print", f"{self._domain}/{label}"))
        if result.returncode != 0:
            return ServiceStatus(True, False, "installed, not loaded", path=str(path))
        state = re.search(r"^\s*state = (\S+)", result.stdout, re.MULTILINE)
        pid = re.search(r"^\s*pid = (\d+)", result.stdout, re.MULTILINE)
        detail = state.group(1) if state else "loaded"
        return ServiceStatus(
            installed=True,
            running=detail == "running",
            detail=detail,
            pid=int(pid.group(1)) if pid else None,
            path=str(path),
        )


_FIX = (
    "run this from a logged-in macOS desktop session (not over ssh without a GUI "
    "login), and check `launchctl print gui/$(id -u)` works"
)
