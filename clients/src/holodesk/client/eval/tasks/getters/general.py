"""General getters: rule (the expected value written in the task) and the output of
a command run as the task's user (vm_command_line: stdout, vm_command_error: stderr)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from typing import Any

from holodesk.client.eval.tasks.context import TaskContext
from holodesk.client.eval.tasks.kinds import Getter
from holodesk.client.eval.tasks.steps.general import check_command

COMMAND_TIMEOUT_S = 30.0


def rule(context: TaskContext, spec: Mapping[str, Any]) -> Any:
    return spec["rules"]


def _ran(context: TaskContext, spec: Mapping[str, Any]) -> Any:
    try:
        return context.run(
            spec["command"], shell=bool(spec.get("shell", False)), timeout_s=COMMAND_TIMEOUT_S
        )
    except (subprocess.TimeoutExpired, OSError):
        return None


def vm_command_line(context: TaskContext, spec: Mapping[str, Any]) -> str | None:
    ran = _ran(context, spec)
    return None if ran is None else str(ran.stdout)


def vm_command_error(context: TaskContext, spec: Mapping[str, Any]) -> str | None:
    ran = _ran(context, spec)
    return None if ran is None else str(ran.stderr)


GETTERS: Mapping[str, Getter] = {
    "rule": Getter(rule, ("rules",)),
    "vm_command_line": Getter(vm_command_line, ("command",), check_command),
    "vm_command_error": Getter(vm_command_error, ("command",), check_command),
}
