"""The demo's child processes: the form app and the daemon."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from holodesk.platform.processes import stop_process

_LISTENING = re.compile(r"holodeskd listening on (\S+)")


class DemoError(RuntimeError):
    """A demo process could not start; the message says which and why."""


class FormAppProcess:
    """The Tk form app on `display`; `state()` is what it has received so far."""

    def __init__(self, display: str, state_file: Path, start_timeout_s: float = 15.0) -> None:
        self._display = display
        self._state_file = state_file
        self._timeout = start_timeout_s
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> FormAppProcess:
        env = {**os.environ, "DISPLAY": self._display}
        self._process = subprocess.Popen(
            [sys.executable, "-m", "holodesk.client.demo.form_app", str(self._state_file)],
            env=env,
            stderr=subprocess.PIPE,
        )
        try:
            self._wait_until_started(self._process)
        except BaseException:
            stop_process(self._process, timeout_s=10.0)  # __exit__ will not run
            raise
        time.sleep(0.3)  # let the window finish its first paint before the first capture
        return self

    def _wait_until_started(self, process: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + self._timeout
        while not self._state_file.exists():
            if process.poll() is not None:
                stderr = process.stderr.read().decode() if process.stderr else ""
                raise DemoError(f"the form app exited early: {stderr.strip()}")
            if time.monotonic() > deadline:
                raise DemoError(f"the form app did not start within {self._timeout:g} s")
            time.sleep(0.05)

    def state(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self._state_file.read_text())
        return loaded

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._process is not None:
            stop_process(self._process, timeout_s=10.0)


@dataclass(frozen=True)
class RunningDaemon:
    address: str
    process: subprocess.Popen[str]


@contextmanager
def launch_daemon(
    policy: str, log_path: Path, start_timeout_s: float = 60.0
) -> Iterator[RunningDaemon]:
    """`holodeskd` on a free loopback port; yields once it reports its address."""
    command = [sys.executable, "-m", "holodesk.daemon.cli", "--listen", "127.0.0.1:0"]
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [*command, "--policy", policy], stdout=subprocess.PIPE, stderr=log, text=True
        )
    try:
        address = _read_address(process, start_timeout_s)
        if address is None:
            log_tail = log_path.read_text()[-2000:]
            raise DemoError(f"holodeskd did not start (exit status {process.poll()}):\n{log_tail}")
        _wait_until_serving(address, start_timeout_s)
        yield RunningDaemon(address, process)
    finally:
        stop_process(process, timeout_s=15)


def _read_address(process: subprocess.Popen[str], timeout_s: float) -> str | None:
    # The daemon prints only this line on stdout; its logs go to the log file.
    assert process.stdout is not None
    deadline = time.monotonic() + timeout_s
    for line in process.stdout:
        found = _LISTENING.search(line)
        if found:
            return found.group(1)
        if time.monotonic() > deadline:
            break
    return None


def _wait_until_serving(address: str, timeout_s: float) -> None:
    """Poll grpc.health.v1 until the daemon's policy is ready."""
    deadline = time.monotonic() + timeout_s
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            try:
                reply = health.Check(health_pb2.HealthCheckRequest(), timeout=5)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass  # not listening yet, or NOT_SERVING: poll again
            time.sleep(0.1)
    raise DemoError(f"holodeskd at {address} did not become ready within {timeout_s:g} s")
