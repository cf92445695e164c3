"""A container runtime (docker or podman) through its command line: what a
SandboxEnvironment needs of one, and nothing more.

Why the command line and no SDK: docker and podman take the same arguments for
these few calls (run, port, logs, inspect, ps, rm), so one path serves both,
rootless podman included, and nothing is added to the client's dependencies.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# The variable packaging/container/sandbox/run.sh reads too: one name for the user.
RUNTIME_VARIABLE = "CONTAINER_RUNTIME"
KNOWN_RUNTIMES = ("docker", "podman")
_TAIL = 2000


class ContainerError(RuntimeError):
    """A runtime that is missing, or a call of it that failed; the message says which."""


def find_runtime(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The runtime's path: `explicit`, else $CONTAINER_RUNTIME, else docker, else podman
    on PATH. None found: one error naming every place looked and the fix."""
    env = os.environ if environ is None else environ
    asked = explicit or env.get(RUNTIME_VARIABLE, "").strip()
    if asked:
        found = shutil.which(asked, path=env.get("PATH"))
        if found is None:
            origin = "given" if explicit else f"set by {RUNTIME_VARIABLE}"
            raise ContainerError(
                f"the container runtime {asked!r} ({origin}) is not an executable here"
            )
        return found
    for name in KNOWN_RUNTIMES:
        found = shutil.which(name, path=env.get("PATH"))
        if found is not None:
            return found
    raise ContainerError(
        f"no container runtime: {RUNTIME_VARIABLE} is not set, and neither "
        + " nor ".join(KNOWN_RUNTIMES)
        + " is on PATH (fix: install docker or podman, or set "
        f"{RUNTIME_VARIABLE}=/path/to/runtime)"
    )


@dataclass(frozen=True)
class ContainerRuntime:
    path: str
    timeout_s: float = 120.0

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def run_detached(
        self,
        image: str,
        *,
        name: str,
        env: Mapping[str, str],
        publish: Sequence[str] = (),
        labels: Mapping[str, str] | None = None,
    ) -> str:
        """Start `image` in the background; its id. It stays, stopped or not, until
        remove(): what it printed is still there to say why it stopped.

        Values of `env` reach the runtime through its own environment (`-e NAME`),
        never its argv, which every user of the machine can read."""
        # Never pulled: an image missing here is an error, not a download of whatever
        # a registry serves under that name.
        args = ["run", "--detach", "--pull", "never", "--name", name]
        for key, value in (labels or {}).items():
            args += ["--label", f"{key}={value}"]
        for mapping in publish:
            args += ["--publish", mapping]
        for key in env:
            args += ["--env", key]
        container = self._call(*args, image, extra_env=env).strip()
        if not container:
            raise ContainerError(f"{self.name} run {image} gave no container id")
        return container.splitlines()[-1]

    def published(self, container: str, port: int) -> tuple[str, int]:
        """(host, port) where the container's TCP `port` is published on this machine."""
        answer = self._call("port", container, f"{port}/tcp").strip()
        first = answer.splitlines()[0] if answer else ""
        host, colon, number = first.rpartition(":")
        if not colon or not number.isdigit():
            raise ContainerError(
                f"{self.name} port {container} {port}/tcp answered {answer!r}, not HOST:PORT"
            )
        host = host.strip("[]")
        return ("127.0.0.1" if host in ("0.0.0.0", "") else host), int(number)

    def logs(self, container: str) -> str:
        """What the container printed so far (stdout and stderr)."""
        done = self._run("logs", container)
        return done.stdout + done.stderr

    def running(self, container: str) -> bool:
        done = self._run("inspect", "--format", "{{.State.Running}}", container)
        return done.returncode == 0 and done.stdout.strip() == "true"

    def remove(self, *containers: str) -> None:
        """Stop and remove; a container already gone is no error."""
        if not containers:
            return
        done = self._run("rm", "--force", *containers)
        if done.returncode != 0 and "no such container" not in done.stderr.lower():
            raise ContainerError(self._failure(["rm", *containers], done))

    def _call(self, *args: str, extra_env: Mapping[str, str] | None = None) -> str:
        done = self._run(*args, extra_env=extra_env)
        if done.returncode != 0:
            raise ContainerError(self._failure(list(args), done))
        return done.stdout

    def _run(
        self, *args: str, extra_env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **extra_env} if extra_env else None
        try:
            return subprocess.run(
                [self.path, *args],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
            )
        except subprocess.TimeoutExpired as error:
            raise ContainerError(
                f"{self.name} {args[0]} did not answer within {self.timeout_s:.0f} s"
            ) from error

    def _failure(self, args: list[str], done: subprocess.CompletedProcess[str]) -> str:
        said = (done.stderr.strip() or done.stdout.strip())[-_TAIL:]
        return f"{self.name} {args[0]} {args[-1]} failed (exit {done.returncode}): {said}"
