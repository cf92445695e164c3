"""VncEnvironment: a desktop some VNC server serves (a VM, a remote machine, a
container run by someone else), and the connection every VNC environment makes.

Its state is not ours to put back, so the caller says how: `reset_command` runs
before every rollout (revert a VM snapshot, restart the app, clear a profile),
with HOLODESK_VNC_SERVER set to the server's address. Without one, each rollout
starts where the previous one left the desktop.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence

from holodesk.client.rollouts.environments.base import Managed, numbered
from holodesk.client.rollouts.trajectory import RolloutTask
from holodesk.platform.base import Backend
from holodesk.platform.errors import BackendUnavailableError
from holodesk.platform.select import open_backend
from holodesk.platform.vnc.address import parse_server
from holodesk.platform.vnc.backend import SERVER_ENV
from holodesk.platform.vnc.errors import AuthenticationError

_RETRY_S = 0.2
_TAIL = 2000


class VncEnvironmentError(RuntimeError):
    """A reset command that failed, or a server that did not answer in time."""


def connect_vnc(host: str, port: int, password: str | None, timeout_s: float) -> Backend:
    """The VNC backend on host:port, trying again until `timeout_s` while the server
    is not there yet (a VM reverting, a container starting: a published port can
    accept and drop connections before anything listens behind it). A password the
    server refuses fails at once: asking again cannot help."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return open_backend("vnc", host=host, port=port, password=password)
        except BackendUnavailableError as error:
            if isinstance(error.__cause__, AuthenticationError) or time.monotonic() >= deadline:
                raise
        time.sleep(_RETRY_S)


class VncEnvironment(Managed):
    """The desktop at `server` ("host", "host:N" for display N, "host::port"), its
    password else $HOLODESK_VNC_PASSWORD; `reset_command` (argv) runs before every
    rollout and must exit 0 within `reset_timeout_s`; the server then has
    `connect_timeout_s` to answer."""

    def __init__(
        self,
        server: str,
        *,
        password: str | None = None,
        reset_command: Sequence[str] = (),
        reset_timeout_s: float = 300.0,
        connect_timeout_s: float = 60.0,
        name: str = "",
    ) -> None:
        self.name = name or numbered("vnc")
        self.server = server
        self.host, self.port = parse_server(server)
        self._password = password
        self.reset_command = tuple(reset_command)
        self.reset_timeout_s = reset_timeout_s
        self.connect_timeout_s = connect_timeout_s

    def start(self) -> None:
        """Nothing to start: the server runs already."""

    def reset(self, task: RolloutTask) -> Backend:
        if self.reset_command:
            self._run_reset()
        return connect_vnc(self.host, self.port, self._password, self.connect_timeout_s)

    def _run_reset(self) -> None:
        shown = " ".join(self.reset_command)
        try:
            done = subprocess.run(
                self.reset_command,
                env={**os.environ, SERVER_ENV: self.server},
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=self.reset_timeout_s,
            )
        except subprocess.TimeoutExpired as error:
            raise VncEnvironmentError(
                f"{self.name}: the reset command {shown!r} ran past {self.reset_timeout_s:g} s"
            ) from error
        except OSError as error:
            raise VncEnvironmentError(
                f"{self.name}: the reset command {shown!r} cannot run: {error}"
            ) from error
        if done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip())[-_TAIL:]
            raise VncEnvironmentError(
                f"{self.name}: the reset command {shown!r} exited {done.returncode}: {said}"
            )

    def close(self) -> None:
        """Nothing to stop: the server is not ours."""
