"""The one place that picks this OS's service manager."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Protocol

from holodesk.platform.services.runner import CommandRunner, ServiceError, run_command
from holodesk.platform.services.spec import ServiceSpec, ServiceStatus


class ServiceManager(Protocol):
    # How the OS calls this kind of service, for messages.
    kind: str

    def render(self, spec: ServiceSpec) -> str: ...

    def install(self, spec: ServiceSpec) -> Path: ...

    def uninstall(self, name: str) -> None: ...

    def status(self, name: str) -> ServiceStatus: ...


def service_manager(
    platform: str = sys.platform, runner: CommandRunner = run_command
) -> ServiceManager:
    if platform.startswith("linux"):
        from holodesk.platform.services.systemd import SystemdUserManager

        return SystemdUserManager(runner=runner)
    if platform == "darwin":
        from holodesk.platform.services.launchd import LaunchdManager

        return LaunchdManager(runner=runner)
    if platform == "win32":
        from holodesk.platform.services.schtasks import SchtasksManager

        return SchtasksManager(runner=runner)
    raise ServiceError(
        f"no per-user service manager for {platform!r}: start `holodesk tray` from your "
        "desktop session's autostart instead"
    )
