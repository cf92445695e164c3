"""The reaper process (ray_pool/reaper.py says why and how it is started):

    python .../reaper_main.py PID CREATE_TIME COOKIE

Run as a file, importing nothing of holodesk (only the standard library and
psutil): one runs beside every environment actor, so it stays small and starts
fast.

What it stops once the actor is gone:
- every process carrying the marker (COOKIE_VARIABLE=COOKIE in its environment);
- every container labelled CONTAINER_LABEL=COOKIE, in each runtime the actor
  noted (note_runtime) before starting one: a container's processes are the
  runtime's children, not the actor's, and carry none of its environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

COOKIE_VARIABLE = "HOLODESK_RAY_ENVIRONMENT"
CONTAINER_LABEL = "holodesk.environment"
REAPER_POLL_S = 0.25
REAPER_GRACE_S = 2.0


def _psutil() -> Any:
    import psutil  # type: ignore[import-untyped]  # the ray extra brings it

    return psutil


def marked(cookie: str) -> list[Any]:
    """Every process of this machine started under the marker `cookie` (psutil.Process)."""
    psutil = _psutil()
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(COOKIE_VARIABLE) == cookie:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def reap(cookie: str, grace_s: float = REAPER_GRACE_S) -> int:
    """SIGTERM every marked process, SIGKILL what is left after `grace_s`; how many."""
    psutil = _psutil()
    processes = marked(cookie)
    for process in processes:
        try:
            process.terminate()
        except psutil.NoSuchProcess:
            continue
    _, alive = psutil.wait_procs(processes, timeout=grace_s)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(alive, timeout=grace_s)
    return len(processes)


def runtimes_file(cookie: str) -> Path:
    """Where the actor marked `cookie` lists the container runtimes it used."""
    return Path(tempfile.gettempdir()) / f"holodesk-reaper-{os.getuid()}" / f"{cookie}.runtimes"


def note_runtime(cookie: str, runtime: str) -> None:
    """Say that the actor marked `cookie` starts containers with `runtime` (a path)."""
    path = runtimes_file(cookie)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    if path.parent.stat().st_uid != os.getuid():
        raise PermissionError(f"{path.parent} belongs to another user")
    known = path.read_text().splitlines() if path.exists() else []
    if runtime not in known:
        with path.open("a") as file:
            file.write(runtime + "\n")


def reap_containers(cookie: str, timeout_s: float = 60.0) -> int:
    """Remove every container labelled with `cookie` in each runtime noted; how many."""
    path = runtimes_file(cookie)
    if not path.exists():
        return 0
    removed = 0
    label = f"label={CONTAINER_LABEL}={cookie}"
    for runtime in path.read_text().splitlines():
        try:
            listed = subprocess.run(
                [runtime, "ps", "--all", "--quiet", "--filter", label],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=True,
            )
            ids = listed.stdout.split()
            if ids:
                subprocess.run(
                    [runtime, "rm", "--force", *ids],
                    capture_output=True,
                    timeout=timeout_s,
                    check=False,
                )
                removed += len(ids)
        except (OSError, subprocess.SubprocessError):
            continue  # this runtime is gone or hangs: the others still get their turn
    path.unlink(missing_ok=True)
    return removed


def alive(pid: int, create_time: float) -> bool:
    """The process `pid` started at `create_time` still runs (a reused pid does not)."""
    psutil = _psutil()
    try:
        process = psutil.Process(pid)
        return bool(
            abs(process.create_time() - create_time) < 0.01
            and process.status() != psutil.STATUS_ZOMBIE
        )
    except psutil.NoSuchProcess:
        return False


def watch(pid: int, create_time: float, cookie: str) -> None:
    while alive(pid, create_time):
        time.sleep(REAPER_POLL_S)
    reap(cookie)
    reap_containers(cookie)


def main(argv: Sequence[str]) -> int:
    pid, create_time, cookie = int(argv[0]), float(argv[1]), argv[2]
    if os.fork() > 0:
        return 0  # the actor waits for this one; the grandchild watches
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    try:
        watch(pid, create_time, cookie)
    finally:
        os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
