"""What the Ray tests' environment actors run, on their nodes: the demo's Tk form app
on a private Xvfb, a reward read from what the app received, and a gate that holds
a session mid-step on chosen nodes (so a node can be killed while it is in one).

Importable on every node: the test cluster's nodes run with the repository on
PYTHONPATH, as a real cluster would have the caller's package installed.

A task's metadata drives it: `name` is what the reward expects the app to have
received; `block_on` ("b", or "any") holds the session on its second screenshot,
on the node whose HOLODESK_TEST_NODE is that letter (or on any node), after
writing `<gate_dir>/blocked-<environment>`; it never opens (the node, the actor
or the driver is killed meanwhile), and gives up after BLOCK_LIMIT_S.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from PIL import Image

from holodesk.client.demo.processes import FormAppProcess
from holodesk.client.rollouts import Finished, Reward, RolloutTask, XvfbEnvironment
from holodesk.platform.base import Backend, Grab, Region, ScreenSource

NODE_VARIABLE = "HOLODESK_TEST_NODE"
BLOCK_LIMIT_S = 120.0
SETTLE_S = 5.0


def node() -> str:
    """The letter of the Ray node this process runs on ('' outside the test cluster)."""
    return os.environ.get(NODE_VARIABLE, "")


class FormApp:
    """A fresh form app per reset with its own state file (picklable: no closure)."""

    def __init__(self) -> None:
        self._dir = ""
        self._count = 0

    def __call__(self, display: str) -> FormAppProcess:
        if not self._dir:
            self._dir = tempfile.mkdtemp(prefix="holodesk-form-")
        self._count += 1
        return FormAppProcess(display, Path(self._dir) / f"form-{self._count}.json")


class GatedScreen(ScreenSource):
    """A screen that stops answering from its second capture on (see the module doc)."""

    def __init__(self, inner: ScreenSource, marker: Path) -> None:
        self._inner = inner
        self._marker = marker
        self._grabs = 0

    def _gate(self) -> None:
        self._grabs += 1
        if self._grabs < 2:
            return
        self._marker.write_text(str(os.getpid()))
        time.sleep(BLOCK_LIMIT_S)

    def displays(self) -> Any:
        return self._inner.displays()

    def grab(self, region: Region) -> Image.Image:
        self._gate()
        return self._inner.grab(region)

    def grab_since(self, region: Region, previous: Grab | None = None) -> Grab:
        self._gate()
        return self._inner.grab_since(region, previous)

    def virtual_desktop(self) -> Region:
        return self._inner.virtual_desktop()

    @property
    def capture_note(self) -> str:
        return self._inner.capture_note

    def close(self) -> None:
        self._inner.close()


class FormEnvironment(XvfbEnvironment):
    def __init__(self, name: str) -> None:
        super().__init__(FormApp(), width=1024, height=640, name=name)

    def reset(self, task: RolloutTask) -> Backend:
        backend = super().reset(task)
        block_on = task.metadata.get("block_on")
        if block_on is not None and block_on in ("any", node()):
            marker = Path(task.metadata["gate_dir"]) / f"blocked-{self.name}"
            return replace(backend, screen=GatedScreen(backend.screen, marker))
        return backend


def form_environment(name: str) -> FormEnvironment:
    """The environment factory the pool calls on each actor's node."""
    return FormEnvironment(name)


def submitted_name(finished: Finished) -> Reward:
    """1 when the app received the name the task typed; the note names the node, so
    the test sees where the reward was computed."""
    app = finished.environment.app_state  # type: ignore[attr-defined]
    expected = finished.trajectory.task.metadata.get("name")
    # The app writes its state file when it has handled the click, which on a loaded
    # machine may be a moment after the session's last step.
    deadline = time.monotonic() + SETTLE_S
    state = app.state()
    while state.get("submitted") != expected and time.monotonic() < deadline:
        time.sleep(0.05)
        state = app.state()
    ok = state.get("submitted") == expected
    return Reward(reward=1.0 if ok else 0.0, success=ok, note=f"node={node()} got={state!r}")


def form_task(name: str, **metadata: Any) -> RolloutTask:
    return RolloutTask(
        f'type "{name}" into "Name"; click "Submit"; answer "signed up {name}"',
        max_steps=10,
        metadata={"name": name, **metadata},
    )
