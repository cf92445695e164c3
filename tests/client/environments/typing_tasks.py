"""Tasks for the rollouts end-to-end tests, and their reward (--reward MODULE:NAME):
each task types a command that makes a file; the reward looks for that file in
the HOME of the container the rollout ran in. The stand-in runtime
(stand_in_runtime.py) keeps each container's HOME at STATE/<id>/home, STATE
beside the runtime's executable."""

from __future__ import annotations

import json
from pathlib import Path

from holodesk.client.rollouts import Finished


def typed_file(finished: Finished) -> bool:
    environment = finished.environment
    runtime = Path(environment.runtime.path)  # type: ignore[attr-defined]
    home = runtime.parent / "runtime" / environment.container / "home"  # type: ignore[attr-defined]
    return bool((home / str(finished.trajectory.task.metadata["file"])).exists())


def write_typing_tasks(path: Path, files: list[str]) -> Path:
    """A task file: one task per name, typing `touch NAME` into the terminal."""
    lines = [
        json.dumps({"task": f'type "touch {n}"; press enter; wait 1', "metadata": {"file": n}})
        for n in files
    ]
    path.write_text("\n".join(lines) + "\n")
    return path
