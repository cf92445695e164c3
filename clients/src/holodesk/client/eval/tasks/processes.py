"""The processes a task's environment starts, owned by it and ended with it.

Every process runs in a process group of its own (a new session), so ending the
group ends whatever the app forked too (Chromium's helpers, a shell's children).
Reset and close end every group, first asking (SIGTERM), then telling (SIGKILL):
no app of one task lives on into the next."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

STOP_GRACE_S = 3.0


@dataclass(frozen=True)
class Ran:
    """A finished command: its exit status and output, as text."""

    returncode: int
    stdout: str
    stderr: str


class OwnedProcesses:
    """Starts processes (each its own group) and ends them all on `stop_all()`.

    `log` is the file their output goes to (a task's apps write there, not to the
    terminal of whoever runs the suite)."""

    def __init__(self, log: Path) -> None:
        self._log_path = log
        self._log: IO[bytes] | None = None
        self._groups: list[subprocess.Popen[bytes]] = []

    def start(
        self,
        command: str | Sequence[str],
        *,
        shell: bool,
        env: Mapping[str, str],
        cwd: Path,
    ) -> subprocess.Popen[bytes]:
        """Start `command` in the background, in a new process group it owns."""
        if self._log is None:
            self._log = self._log_path.open("ab")
        process = subprocess.Popen(
            command if shell or not isinstance(command, str) else [command],
            shell=shell,
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            start_new_session=True,
        )
        self._groups.append(process)
        return process

    def run(
        self,
        command: str | Sequence[str],
        *,
        shell: bool,
        env: Mapping[str, str],
        cwd: Path,
        timeout_s: float,
    ) -> Ran:
        """Run `command` to its end (its whole group is killed past `timeout_s`:
        subprocess.TimeoutExpired is raised then)."""
        process = subprocess.Popen(
            command if shell or not isinstance(command, str) else [command],
            shell=shell,
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _signal_group(process.pid, signal.SIGKILL)
            process.communicate()
            raise
        # Whatever it left running in its group (a `cmd &`) belongs to the environment.
        if _group_alive(process.pid):
            self._groups.append(process)
        return Ran(
            process.returncode,
            out.decode("utf-8", "replace"),
            err.decode("utf-8", "replace"),
        )

    @property
    def group_ids(self) -> tuple[int, ...]:
        return tuple(p.pid for p in self._groups)

    def stop_all(self) -> None:
        """End every group started here: SIGTERM, a grace period, then SIGKILL."""
        groups, self._groups = self._groups, []
        for process in groups:
            _signal_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for process in groups:
            while _group_alive(process.pid) and time.monotonic() < deadline:
                process.poll()
                time.sleep(0.02)
            if _group_alive(process.pid):
                _signal_group(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=STOP_GRACE_S)
        if self._log is not None:
            self._log.close()
            self._log = None


def _signal_group(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def _group_alive(group: int) -> bool:
    """Some process of the group still exists (zombies of ours aside: the leader is
    reaped by the caller's poll/wait)."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _has_live_member(group)


def _has_live_member(group: int) -> bool:
    """killpg(0) succeeds while only zombies remain; /proc tells them apart."""
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # fields: state, ppid, pgrp, ...
        if len(fields) > 2 and int(fields[2]) == group and fields[0] != "Z":
            return True
    return False
