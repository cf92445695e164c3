"""Linux: a systemd --user unit bound to the graphical session."""

from __future__ import annotations

import os
from pathlib import Path

from holodesk.platform.services.rollback import installing
from holodesk.platform.services.runner import (
    CommandRunner,
    ServiceError,
    check,
    run_command,
)
from holodesk.platform.services.spec import ServiceSpec, ServiceStatus

_SYSTEMCTL = ("systemctl", "--user")


def quote_exec_arg(arg: str) -> str:
    """One ExecStart= word: double-quoted with C escapes, specifiers and variables
    doubled so systemd passes the text through unchanged (systemd.service(5),
    "Command lines")."""
    escaped = (
        arg.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\t", "\\t")
        .replace("%", "%%")
        .replace("$", "$$")
    )
    return f'"{escaped}"'


def render_user_unit(spec: ServiceSpec) -> str:
    exec_start = " ".join(quote_exec_arg(arg) for arg in spec.argv)
    return f"""\
# holodesk: {spec.name}, the client in your graphical session (systemd --user).
# Installed by `holodesk service install`; remove with `holodesk service uninstall`.
[Unit]
Description={spec.description}
# Starts with the desktop session and stops with it: the client needs its screen.
PartOf=graphical-session.target
After=graphical-session.target
Requisite=graphical-session.target
# A client that keeps crashing should stop retrying, not flood the journal.
StartLimitIntervalSec=300
StartLimitBurst=5

[Service]
Type=exec
ExecStart={exec_start}
Restart=on-failure
RestartSec=5
NoNewPrivileges=yes

[Install]
WantedBy=graphical-session.target
"""


class SystemdUserManager:
    kind = "systemd --user"

    def __init__(
        self, *, config_home: Path | None = None, runner: CommandRunner = run_command
    ) -> None:
        base = config_home or Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
        self._unit_dir = base / "systemd" / "user"
        self._run = runner

    def unit_path(self, name: str) -> Path:
        return self._unit_dir / f"{name}.service"

    def render(self, spec: ServiceSpec) -> str:
        return render_user_unit(spec)

    def install(self, spec: ServiceSpec) -> Path:
        path = self.unit_path(spec.name)
        unit = f"{spec.name}.service"

        def undo(replaced: bool) -> None:
            if not replaced:
                self._run((*_SYSTEMCTL, "disable", "--now", unit))
            self._run((*_SYSTEMCTL, "daemon-reload"))

        with installing(path, render_user_unit(spec).encode("utf-8"), undo):
            self._systemctl("daemon-reload")
            self._systemctl("enable", "--now", unit)
        return path

    def uninstall(self, name: str) -> None:
        path = self.unit_path(name)
        if not path.exists():
            raise ServiceError(f"{name} is not installed ({path} does not exist)")
        # Disable even if it is not running; a stopped unit is not an error here.
        self._systemctl("disable", "--now", f"{name}.service")
        path.unlink()
        self._systemctl("daemon-reload")

    def status(self, name: str) -> ServiceStatus:
        path = self.unit_path(name)
        if not path.exists():
            return ServiceStatus(installed=False, running=False, detail="not installed")
        argv = (*_SYSTEMCTL, "show", f"{name}.service", "--property=ActiveState,SubState,MainPID")
        result = check(self._run(argv), argv, _FIX)
        fields = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
        active, sub = fields.get("ActiveState", "unknown"), fields.get("SubState", "unknown")
        pid = int(fields.get("MainPID", "0") or 0)
        return ServiceStatus(
            installed=True,
            running=active == "active",
            detail=f"{active} ({sub})",
            pid=pid or None,
            path=str(path),
        )

    def _systemctl(self, *args: str) -> None:
        argv = (*_SYSTEMCTL, *args)
        check(self._run(argv), argv, _FIX)


_FIX = (
    "the systemd user manager must be running (log in to a desktop session; on a "
    "server, `loginctl enable-linger $USER`); without systemd, start `holodesk tray` "
    "from your desktop's autostart instead"
)
