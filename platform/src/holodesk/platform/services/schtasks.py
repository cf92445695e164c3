"""Windows: a scheduled task that starts the client at the user's logon.

A logon task with an interactive token runs in the user's desktop session, which
capture and SendInput need; a Windows service would run in session 0 and see no
desktop. It runs with the user's ordinary rights (LeastPrivilege): Windows then
refuses to let it drive elevated windows, and the client reports that clearly.
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from holodesk.platform.services.rollback import installing
from holodesk.platform.services.runner import (
    CommandRunner,
    ServiceError,
    check,
    run_command,
)
from holodesk.platform.services.spec import ServiceSpec, ServiceStatus

TASK_NAMESPACE = "http://schemas.microsoft.com/windows/2004/02/mit/task"


def render_task_xml(spec: ServiceSpec, user_id: str) -> str:
    ET.register_namespace("", TASK_NAMESPACE)

    def sub(parent: ET.Element, tag: str, text: str | None = None) -> ET.Element:
        element = ET.SubElement(parent, f"{{{TASK_NAMESPACE}}}{tag}")
        if text is not None:
            element.text = text
        return element

    task = ET.Element(f"{{{TASK_NAMESPACE}}}Task", {"version": "1.2"})
    info = sub(task, "RegistrationInfo")
    sub(info, "Description", spec.description)
    sub(info, "URI", f"\\{spec.name}")
    trigger = sub(sub(task, "Triggers"), "LogonTrigger")
    sub(trigger, "Enabled", "true")
    sub(trigger, "UserId", user_id)
    principal = sub(sub(task, "Principals"), "Principal")
    principal.set("id", "Author")
    sub(principal, "UserId", user_id)
    sub(principal, "LogonType", "InteractiveToken")
    sub(principal, "RunLevel", "LeastPrivilege")
    settings = sub(task, "Settings")
    sub(settings, "MultipleInstancesPolicy", "IgnoreNew")
    sub(settings, "DisallowStartIfOnBatteries", "false")
    sub(settings, "StopIfGoingOnBatteries", "false")
    sub(settings, "AllowHardTerminate", "true")
    sub(settings, "StartWhenAvailable", "true")
    sub(settings, "AllowStartOnDemand", "true")
    sub(settings, "Enabled", "true")
    sub(settings, "Hidden", "false")
    # PT0S: no time limit; the default (72 h) would kill a long-running client.
    sub(settings, "ExecutionTimeLimit", "PT0S")
    restart = sub(settings, "RestartOnFailure")
    sub(restart, "Interval", "PT1M")
    sub(restart, "Count", "3")
    actions = sub(task, "Actions")
    actions.set("Context", "Author")
    execute = sub(actions, "Exec")
    sub(execute, "Command", spec.argv[0])
    if len(spec.argv) > 1:
        # CreateProcess splits the command line back with the MSVC rules list2cmdline follows.
        sub(execute, "Arguments", subprocess.list2cmdline(spec.argv[1:]))
    ET.indent(task)
    body = ET.tostring(task, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-16"?>\n{body}\n'


def _current_user() -> str:
    user = os.environ.get("USERNAME") or os.environ.get("USER") or "user"
    domain = os.environ.get("USERDOMAIN")
    return f"{domain}\\{user}" if domain else user


class SchtasksManager:
    kind = "Windows logon task"

    def __init__(
        self,
        *,
        state_dir: Path | None = None,
        user_id: str | None = None,
        runner: CommandRunner = run_command,
    ) -> None:
        local = os.environ.get("LOCALAPPDATA")
        self._state_dir = state_dir or (Path(local) if local else Path.home()) / "holodesk"
        self._user_id = user_id or _current_user()
        self._run = runner

    def task_file(self, name: str) -> Path:
        return self._state_dir / f"{name}.task.xml"

    def render(self, spec: ServiceSpec) -> str:
        return render_task_xml(spec, self._user_id)

    def install(self, spec: ServiceSpec) -> Path:
        path = self.task_file(spec.name)
        create = ("schtasks", "/Create", "/TN", spec.name, "/XML", str(path), "/F")

        def undo(replaced: bool) -> None:
            # The task as it was: the old definition again, or none.
            self._run(create if replaced else ("schtasks", "/Delete", "/TN", spec.name, "/F"))

        # schtasks reads the XML in the encoding it declares; UTF-16 (with a BOM) is
        # what it writes itself.
        xml = render_task_xml(spec, self._user_id).encode("utf-16")
        with installing(path, xml, undo):
            check(self._run(create), create, _FIX)
            start = ("schtasks", "/Run", "/TN", spec.name)
            check(self._run(start), start, _FIX)
        return path

    def uninstall(self, name: str) -> None:
        if not self._query(name):
            raise ServiceError(f"{name} is not installed (schtasks knows no such task)")
        self._run(("schtasks", "/End", "/TN", name))
        argv = ("schtasks", "/Delete", "/TN", name, "/F")
        check(self._run(argv), argv, _FIX)
        self.task_file(name).unlink(missing_ok=True)

    def status(self, name: str) -> ServiceStatus:
        row = self._query(name)
        if not row:
            return ServiceStatus(installed=False, running=False, detail="not installed")
        state = row[2] if len(row) > 2 else "unknown"
        return ServiceStatus(
            installed=True,
            running=state == "Running",
            detail=state,
            path=str(self.task_file(name)),
        )

    def _query(self, name: str) -> list[str] | None:
        result = self._run(("schtasks", "/Query", "/TN", name, "/FO", "CSV", "/NH"))
        if result.returncode != 0:
            return None
        rows = [row for row in csv.reader(io.StringIO(result.stdout)) if row]
        return rows[0] if rows else None


_FIX = (
    "run this as the user who will be logged in at the desktop, from a normal (not elevated) prompt"
)
