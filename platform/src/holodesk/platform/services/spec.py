"""What a per-user service runs, independent of the OS that runs it."""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = re.compile(r"[a-z][a-z0-9-]{0,63}")


@dataclass(frozen=True)
class ServiceSpec:
    # Lower case, digits and dashes: valid as a unit name, a launchd label part and a task name.
    name: str
    description: str
    # The program and its arguments; no shell is involved on any OS.
    argv: tuple[str, ...]

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(
                f"service name {self.name!r}: use lower-case letters, digits and dashes"
            )
        if not self.argv:
            raise ValueError("a service needs a program to run")
        if any("\n" in arg or "\0" in arg for arg in self.argv):
            raise ValueError("service arguments cannot contain newlines or NUL characters")

    @property
    def launchd_label(self) -> str:
        return f"dev.holodesk.{self.name}"


@dataclass(frozen=True)
class ServiceStatus:
    installed: bool
    running: bool
    # The OS tool's own words (e.g. "active (running)", "Ready"), for the user.
    detail: str = ""
    pid: int | None = None
    # Where the definition lives, when installed.
    path: str = ""
