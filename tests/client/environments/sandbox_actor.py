"""A stand-in environment actor, run as a process by test_sandbox_reaping.py:

    python -m tests.client.environments.sandbox_actor RUNTIME

It guards itself as a pool's actor does (the reaper), starts a sandbox container
through RUNTIME, prints "ready CONTAINER" and waits to be killed.
"""

from __future__ import annotations

import sys
import time

from holodesk.client.rollouts.environments import SandboxEnvironment
from holodesk.client.rollouts.ray_pool.reaper import guard_this_process
from holodesk.client.rollouts.trajectory import RolloutTask


def main(runtime: str) -> None:
    guard_this_process()
    environment = SandboxEnvironment(runtime=runtime, apps="xterm", width=640, height=480)
    environment.start()
    environment.reset(RolloutTask("wait")).close()
    print("ready", environment.container, flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main(sys.argv[1])
