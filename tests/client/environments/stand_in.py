"""The stand-in container runtime (stand_in_runtime.py) installed in a folder: an
executable that SandboxEnvironment and the reaper call as they would call docker."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from holodesk.client.rollouts.environments.sandbox import DEFAULT_IMAGE
from tests.client.environments import stand_in_runtime

REPOSITORY = Path(__file__).resolve().parents[3]
ENTRYPOINT = REPOSITORY / "packaging" / "container" / "sandbox" / "entrypoint.sh"
# An image whose container runs and never says it is ready.
NEVER_READY = "stand-in/never-ready"


@dataclass(frozen=True)
class StandIn:
    path: Path  # the executable to pass as the runtime
    state: Path

    def containers(self) -> list[dict[str, object]]:
        """Every container the runtime holds, running or stopped."""
        return [json.loads(p.read_text()) for p in sorted(self.state.glob("*/info.json"))]

    def running(self) -> list[dict[str, object]]:
        return [c for c in self.containers() if stand_in_runtime.alive(c)]

    def calls(self) -> list[list[str]]:
        log = self.state / "calls.log"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def remove_all(self) -> None:
        for container in self.containers():
            stand_in_runtime.stop(container)


def install_stand_in(folder: Path) -> StandIn:
    """The runtime at FOLDER/docker, its containers under FOLDER/runtime, serving
    DEFAULT_IMAGE from the repository's entrypoint, and NEVER_READY."""
    state = folder / "runtime"
    never_ready = folder / "never-ready.sh"
    never_ready.write_text("echo 'sandbox: starting'\nexec sleep 600\n")
    path = folder / "docker"
    path.write_text(
        "#!/bin/sh\n"
        f"exec {sys.executable} {Path(stand_in_runtime.__file__)} {state} "
        f'{DEFAULT_IMAGE}={ENTRYPOINT} {NEVER_READY}={never_ready} -- "$@"\n'
    )
    path.chmod(0o755)
    return StandIn(path, state)
