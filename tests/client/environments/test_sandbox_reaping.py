"""An environment actor SIGKILLed with its sandbox container up: the reaper removes
the container, which is no child of the actor and carries none of its marker
(the stand-in runtime starts it with the container's variables only, as docker
does), through the runtime the actor noted before starting it."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from holodesk.client.rollouts import reaper_main
from tests.client.environments import stand_in_runtime
from tests.client.environments.stand_in import REPOSITORY, StandIn

pytestmark = [pytest.mark.vnc, pytest.mark.timeout(120)]

# The reaper's poll and grace, and the runtime's rm, with room for a loaded machine.
REAPED_WITHIN_S = 30.0


def test_a_killed_actors_container_is_removed_by_its_reaper(stand_in: StandIn) -> None:
    actor = subprocess.Popen(
        [sys.executable, "-m", "tests.client.environments.sandbox_actor", str(stand_in.path)],
        cwd=REPOSITORY,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert actor.stdout is not None
        line = actor.stdout.readline()
        assert line.startswith("ready "), f"the actor did not start its container: {line!r}"
        (container,) = stand_in.containers()
        assert container["id"] == line.split()[1]
        owner = container["labels"][reaper_main.CONTAINER_LABEL]  # type: ignore[index]
        assert reaper_main.runtimes_file(owner).read_text().split() == [str(stand_in.path)]
        actor.kill()
        actor.wait(timeout=10)
        deadline = time.monotonic() + REAPED_WITHIN_S
        noted = reaper_main.runtimes_file(owner)
        # The reaper removes the containers, then its note of the runtime.
        while stand_in.containers() or stand_in_runtime.alive(container) or noted.exists():
            assert stand_in.containers() == [] or time.monotonic() < deadline, (
                "the killed actor's container is still there"
            )
            assert time.monotonic() < deadline, f"{noted} was left"
            time.sleep(0.2)
        rm_calls = [call for call in stand_in.calls() if call[0] == "rm"]
        assert rm_calls, "the reaper never called the runtime's rm"
        assert container["id"] in rm_calls[-1]
    finally:
        if actor.poll() is None:
            actor.kill()
            actor.wait()
