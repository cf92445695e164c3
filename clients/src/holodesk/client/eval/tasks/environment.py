"""TaskEnvironment: a fresh desktop for every run of a task, on this host.

Each reset stops whatever the previous task left (its processes, its X server, its
D-Bus bus) and makes everything anew: a new Xvfb display, a new empty HOME, a new
cache folder, a private XDG_RUNTIME_DIR and D-Bus session bus (so single-instance
apps such as mousepad never hand a file to another environment's window), then runs
the task's `config` steps against them. Every process a step starts belongs to the environment and
ends at the next reset or at close: none is left behind.

It is an Environment of holodesk.client.rollouts (name, start, reset, close): the
task comes in RolloutTask.metadata (rollout.py), so run_rollouts, and any pool
that can call these four methods, runs OSWorld tasks unchanged."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from pathlib import Path

from holodesk.client.eval.tasks.context import TaskContext
from holodesk.client.eval.tasks.model import Task
from holodesk.client.eval.tasks.processes import OwnedProcesses
from holodesk.client.eval.tasks.rollout import task_of
from holodesk.client.eval.tasks.setup import run_steps
from holodesk.client.rollouts.environments.base import Managed, numbered
from holodesk.client.rollouts.trajectory import RolloutTask
from holodesk.platform.base import Backend
from holodesk.platform.select import open_backend
from holodesk.platform.virtual_display import VirtualDisplay

BUS_TIMEOUT_S = 10.0


class TaskEnvironment(Managed):
    """`width` x `height` displays; `workdir` holds each run's HOME and cache (a
    temporary folder by default, removed at the next reset and at close)."""

    def __init__(
        self,
        *,
        width: int = 1280,
        height: int = 800,
        name: str = "",
        workdir: Path | None = None,
    ) -> None:
        self.name = name or numbered("task")
        self.width = width
        self.height = height
        self._workdir = workdir
        self._display: VirtualDisplay | None = None
        self._run_dir: Path | None = None
        self._context: TaskContext | None = None
        # reset() runs in a worker thread that a cancelled run cannot stop: close()
        # waits for it, so nothing it starts outlives the environment.
        self._lock = threading.Lock()
        self._closed = False

    @property
    def context(self) -> TaskContext:
        """The running task's context (its display, HOME, processes ...)."""
        if self._context is None:
            raise RuntimeError(f"{self.name}: no task is running (reset() it first)")
        return self._context

    def start(self) -> None:
        """Nothing to start before a task: every reset makes the desktop anew."""

    def reset(self, task: RolloutTask) -> Backend:
        definition = task_of(task)
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self.name} is closed")
            self._teardown()
            return self._fresh(definition)

    def _fresh(self, definition: Task) -> Backend:
        display = VirtualDisplay(self.width, self.height)
        self._display = display
        display.start()
        run_dir = Path(tempfile.mkdtemp(prefix=f"holodesk-{self.name}-", dir=self._workdir))
        self._run_dir = run_dir
        home, cache, runtime = run_dir / "home", run_dir / "cache", run_dir / "runtime"
        home.mkdir()
        cache.mkdir()
        runtime.mkdir(mode=0o700)
        context = TaskContext(
            display=display.display,
            home=home,
            cache=cache,
            task_folder=definition.folder,
            processes=OwnedProcesses(run_dir / "processes.log"),
            width=self.width,
            height=self.height,
            runtime_dir=runtime,
        )
        self._context = context
        context.bus = self._start_bus(context, run_dir / "bus")
        run_steps(definition.config, context, task_id=definition.id)
        return open_backend("x11", display=display.display)

    def _start_bus(self, context: TaskContext, socket: Path) -> str:
        """A private D-Bus session bus, owned like any app; "" without dbus-daemon."""
        if shutil.which("dbus-daemon") is None:
            return ""
        address = f"unix:path={socket}"
        context.processes.start(
            ["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--address={address}"],
            shell=False,
            env=context.env(),
            cwd=context.home,
        )
        deadline = time.monotonic() + BUS_TIMEOUT_S
        while not socket.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"dbus-daemon did not open {socket} in {BUS_TIMEOUT_S:g} s")
            time.sleep(0.01)
        return address

    def _teardown(self) -> None:
        context, self._context = self._context, None
        display, self._display = self._display, None
        run_dir, self._run_dir = self._run_dir, None
        try:
            if context is not None:
                context.processes.stop_all()
        finally:
            try:
                if display is not None:
                    display.stop()
            finally:
                if run_dir is not None:
                    shutil.rmtree(run_dir, ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._teardown()
