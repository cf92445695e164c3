"""No desktop outlives the environment actor that started it.

An environment actor starts an Xvfb, an app, a browser: processes of its own that
Ray does not know about. Ray kills an actor's direct children when the actor exits
cleanly, but not when it is killed (`ray.kill`, its node's raylet gone, the driver
SIGKILLed and the job torn down), and never its grandchildren (a browser's
renderers, an app's helpers). So the actor marks every process it will start, and
a reaper outside it stops them once it is gone:

- the marker is an environment variable with a value unique to the actor
  (COOKIE_VARIABLE), set in the actor's own environment before its desktop starts:
  every process started from it inherits it, however deep (Jenkins's process tree
  killer finds a build's strays the same way);
- the reaper is a separate process (double-forked and in its own session, so that
  killing the actor, its process group or its direct children does not take it
  along) that polls the actor's pid and creation time every REAPER_POLL_S; when
  the actor is gone it sends SIGTERM to every process carrying the marker, SIGKILL
  to those still there after REAPER_GRACE_S, and exits.

A process that empties its environment (env -i) escapes the marker: apps started
through XvfbEnvironment and WebEnvironment keep it.

The reaper process is reaper_main.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from typing import Any

from holodesk.client.rollouts.ray_pool.loading import import_psutil

COOKIE_VARIABLE = "HOLODESK_RAY_ENVIRONMENT"
REAPER_POLL_S = 0.25
REAPER_GRACE_S = 2.0
REAPER_MODULE = "holodesk.client.rollouts.ray_pool.reaper_main"


def guard_this_process() -> str:
    """Mark this process's future children and start their reaper; the marker's value.

    Called once in each environment actor, before it starts its desktop."""
    psutil = import_psutil()
    cookie = os.environ.get(COOKIE_VARIABLE)
    if cookie:
        return cookie  # already guarded (a second environment in the same worker)
    cookie = uuid.uuid4().hex
    me = psutil.Process()
    clean = {k: v for k, v in os.environ.items() if k != COOKIE_VARIABLE}
    # The reaper forks itself away and this call returns once it runs on its own.
    subprocess.run(
        [sys.executable, "-m", REAPER_MODULE, str(me.pid), repr(me.create_time()), cookie],
        env=clean,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        check=True,
        timeout=60,
    )
    os.environ[COOKIE_VARIABLE] = cookie
    return cookie


def marked(cookie: str) -> list[Any]:
    """Every process of this machine started under the marker `cookie` (psutil.Process)."""
    psutil = import_psutil()
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
    psutil = import_psutil()
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


def _alive(pid: int, create_time: float) -> bool:
    psutil = import_psutil()
    try:
        process = psutil.Process(pid)
        # A reused pid is another process: the actor is gone.
        return bool(
            abs(process.create_time() - create_time) < 0.01
            and process.status() != psutil.STATUS_ZOMBIE
        )
    except psutil.NoSuchProcess:
        return False


def watch(pid: int, create_time: float, cookie: str) -> None:
    while _alive(pid, create_time):
        time.sleep(REAPER_POLL_S)
    reap(cookie)
