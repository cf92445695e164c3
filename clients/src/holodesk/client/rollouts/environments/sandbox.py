"""SandboxEnvironment: a fresh holodesk sandbox container (docs/sandbox.md) for
every rollout, driven over VNC.

Why a container per rollout: starting the desktop again is the one way to put
all of it back (files, app state, the browser's profile), and the sandbox comes
up in seconds. Each container serves VNC on a port published on this machine's
loopback only, behind a password made for it (VNC authentication reads 8
characters), with noVNC off.

No container outlives its environment: close() removes the last one, and every
container carries the label CONTAINER_LABEL with its owner's reaper marker, so
when an environment actor is killed its reaper removes them (reaper_main.py).
"""

from __future__ import annotations

import os
import re
import secrets
import time
import uuid

from holodesk.client.rollouts import reaper_main
from holodesk.client.rollouts.environments.base import Managed, numbered
from holodesk.client.rollouts.environments.containers import (
    ContainerError,
    ContainerRuntime,
    find_runtime,
)
from holodesk.client.rollouts.environments.vnc import connect_vnc
from holodesk.client.rollouts.trajectory import RolloutTask
from holodesk.platform.base import Backend

DEFAULT_IMAGE = "holodesk/sandbox"
# Where the image's entrypoint serves VNC inside the container (SANDBOX_VNC_PORT).
VNC_PORT = 5901
READY_LINE = "sandbox: ready"
NAME_LABEL = "holodesk.environment-name"
_POLL_S = 0.2
_TAIL = 2000


class SandboxEnvironment(Managed):
    """A sandbox container of `image` per rollout (`runtime`: a path or name, else
    $CONTAINER_RUNTIME, else docker, else podman), `apps` started on its desktop
    (the image's SANDBOX_APPS syntax, "a; b"; None: the image's own), at
    `width`x`height`; each container has `start_timeout_s` to say it is ready."""

    def __init__(
        self,
        image: str = DEFAULT_IMAGE,
        *,
        apps: str | None = None,
        width: int = 1280,
        height: int = 800,
        runtime: str | None = None,
        start_timeout_s: float = 90.0,
        name: str = "",
    ) -> None:
        self.name = name or numbered("sandbox")
        self.image = image
        self.apps = apps
        self.width = width
        self.height = height
        self.start_timeout_s = start_timeout_s
        self._asked_runtime = runtime
        self._runtime: ContainerRuntime | None = None
        self.container: str | None = None

    def start(self) -> None:
        """Find the runtime (a missing one fails here, before any rollout)."""
        if self._runtime is None:
            self._runtime = ContainerRuntime(find_runtime(self._asked_runtime))

    def reset(self, task: RolloutTask) -> Backend:
        self.start()
        self._remove()
        password = secrets.token_urlsafe(6)[:8]
        deadline = time.monotonic() + self.start_timeout_s
        self.container = self._run(password)
        try:
            host, port = self._wait_until_ready(self.container, deadline)
            remaining = max(1.0, deadline - time.monotonic())
            return connect_vnc(host, port, password, remaining)
        except BaseException:
            self._remove()
            raise

    def close(self) -> None:
        self._remove()

    @property
    def runtime(self) -> ContainerRuntime:
        if self._runtime is None:
            raise RuntimeError(f"{self.name}: start() first")
        return self._runtime

    def _run(self, password: str) -> str:
        owner = os.environ.get(reaper_main.COOKIE_VARIABLE, "")
        if owner:
            # Before the container exists: a kill between run and here leaves none unknown.
            reaper_main.note_runtime(owner, self.runtime.path)
        env = {
            "SANDBOX_VNC_LISTEN": "0.0.0.0",  # inside the container; published on loopback
            "SANDBOX_VNC_PASSWORD": password,
            "SANDBOX_NOVNC": "0",
            "SANDBOX_GEOMETRY": f"{self.width}x{self.height}",
        }
        if self.apps is not None:
            env["SANDBOX_APPS"] = self.apps
        try:
            return self.runtime.run_detached(
                self.image,
                name=_container_name(self.name),
                env=env,
                publish=[f"127.0.0.1::{VNC_PORT}"],
                labels={reaper_main.CONTAINER_LABEL: owner, NAME_LABEL: self.name},
            )
        except ContainerError as error:
            raise ContainerError(
                f"{self.name}: {error} (the image is never pulled: build it on this node, "
                f"e.g. `{self.runtime.name} build -f packaging/container/sandbox/Containerfile "
                f"-t {self.image} .` in a holodesk checkout; docs/sandbox.md)"
            ) from error

    def _wait_until_ready(self, container: str, deadline: float) -> tuple[str, int]:
        while True:
            logs = self.runtime.logs(container)
            if READY_LINE in logs:
                return self.runtime.published(container, VNC_PORT)
            if not self.runtime.running(container):
                logs = self.runtime.logs(container)  # all it printed before it stopped
                raise ContainerError(
                    f"{self.name}: the sandbox container {container[:12]} of {self.image} "
                    f"stopped before it was ready: {_tail(logs)}"
                )
            if time.monotonic() >= deadline:
                raise ContainerError(
                    f"{self.name}: the sandbox container {container[:12]} of {self.image} "
                    f"was not ready within {self.start_timeout_s:g} s: {_tail(logs)}"
                )
            time.sleep(_POLL_S)

    def _remove(self) -> None:
        container, self.container = self.container, None
        if container is not None:
            self.runtime.remove(container)


def _container_name(environment: str) -> str:
    """A container name the runtimes accept, unique, and telling whose it is."""
    safe = re.sub(r"[^a-zA-Z0-9_.-]", "-", environment).strip("-.") or "env"
    return f"holodesk-{safe}-{uuid.uuid4().hex[:8]}"


def _tail(logs: str) -> str:
    text = logs.strip()
    return text[-_TAIL:] if text else "(it printed nothing)"
