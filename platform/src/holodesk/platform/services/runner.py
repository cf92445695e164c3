"""Running the OS's service tools; tests hand managers a fake runner instead."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class ServiceError(Exception):
    """A service operation failed; the message says what to do."""


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str = ""
    stderr: str = ""


class CommandRunner(Protocol):
    def __call__(self, argv: Sequence[str]) -> CommandResult: ...


def run_command(argv: Sequence[str]) -> CommandResult:
    """Runs a tool; a missing tool is a ServiceError naming it, not a traceback."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)
    except FileNotFoundError:
        raise ServiceError(f"{argv[0]} was not found on PATH") from None
    except subprocess.TimeoutExpired:
        raise ServiceError(f"{' '.join(argv)} did not finish within 60 s") from None
    return CommandResult(done.returncode, done.stdout, done.stderr)


def check(result: CommandResult, argv: Sequence[str], fix: str) -> CommandResult:
    if result.returncode != 0:
        said = (result.stderr or result.stdout).strip() or f"exit status {result.returncode}"
        raise ServiceError(f"{' '.join(argv)} failed: {said}\n  fix: {fix}")
    return result
