"""The processes a task's environment starts, owned by it and ended with it.

Every process runs in a process group of its own (a new session), so ending the
group ends whatever the app forked too (Chromium's helpers, a shell's children).
Reset and close end every group, first asking (SIGTERM), then telling (SIGKILL):
no app of one task lives on into the next.

Some processes leave their group: xterm puts its shell in a session of its own, a
daemon double-forks and calls setsid. Every process started here carries a marker
in its environment (MARKER_VARIABLE, inherited by whatever it starts), so those are
found (/proc/<pid>/environ) and ended too."""

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
# In the environment of every process a task starts: which OwnedProcesses owns it.
MARKER_VARIABLE = "HOLODESK_TASK_PROCESSES"


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
        # Unique to this owner: its log's path (one per run of a task).
        self.marker = str(log.resolve())

    def _env(self, env: Mapping[str, str]) -> dict[str, str]:
        return {**env, MARKER_VARIABLE: self.marker}

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
            env=self._env(env),
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
            env=self._env(env),
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
            # A killed process takes a moment to be gone: return only once it is.
            gone_by = time.monotonic() + STOP_GRACE_S
            while _group_alive(process.pid) and time.monotonic() < gone_by:
                time.sleep(0.01)
        self._stop_strays()
        if self._log is not None:
            self._log.close()
            self._log = None

    def _stop_strays(self) -> None:
        """End the processes that left their group but carry this owner's marker."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            strays = marked_processes(MARKER_VARIABLE, self.marker)
            if not strays:
                return
            for pid in strays:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + (0.5 if sig == signal.SIGTERM else STOP_GRACE_S)
            while marked_processes(MARKER_VARIABLE, self.marker):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.02)


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


def marked_processes(variable: str, value: str) -> list[int]:
    """Live processes (zombies aside) whose environment sets `variable` to `value`."""
    wanted = f"{variable}={value}".encode()
    found: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if wanted not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found
