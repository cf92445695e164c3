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

The reaper process is reaper_main.py, run as a file (it imports nothing of holodesk).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from holodesk.client.rollouts import reaper_main
from holodesk.client.rollouts.ray_pool.loading import import_psutil
from holodesk.client.rollouts.reaper_main import COOKIE_VARIABLE

__all__ = ["COOKIE_VARIABLE", "guard_this_process"]


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
        [sys.executable, reaper_main.__file__, str(me.pid), repr(me.create_time()), cookie],
        env=clean,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        check=True,
        timeout=60,
    )
    os.environ[COOKIE_VARIABLE] = cookie
    return cookie
