"""The reaper process (reaper.py says why): `python -m
holodesk.client.rollouts.ray_pool.reaper_main PID CREATE_TIME COOKIE`. Its own module,
so that running it does not import it twice (the package imports reaper.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from holodesk.client.rollouts.ray_pool.reaper import watch


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
