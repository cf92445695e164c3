"""The example's environments and reward: one task, "click the green target", on a web
page (headless Chromium) and in a desktop app (its own Xvfb display), scored by what
the page or the app itself recorded.

Why this task: a loop test needs a reward that tells success from failure, and
rewards that differ within a group, or GRPO has nothing to learn from (every
advantage 0, the update changes no weight, and the daemon rightly refuses an update
that changed nothing). A click inside the target is a success (reward 1); a miss
scores less the farther it landed, so two trajectories of one task almost never tie
even when both fail. Replace it with your own environments and evaluator: the loop
only needs `Environment`s and a reward function (holodesk.client.rollouts).
"""

from __future__ import annotations

import contextlib
import json
import math
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from holodesk.client.rollouts import (
    Environment,
    Finished,
    Reward,
    RolloutTask,
    WebEnvironment,
    XvfbEnvironment,
)

# Each task is one GRPO group (the trainer groups rows by the task's text).
TASKS = ("Click the green OK button.", "Press OK.", "Click OK.")
APP = Path(__file__).with_name("target_app.py")


@dataclass(frozen=True)
class Target:
    """The screen and the target's rectangle on it, in pixels: [left, right) x [top, bottom)."""

    width: int = 512
    height: int = 512
    left: int = 40
    top: int = 40
    right: int = 216
    bottom: int = 472

    def contains(self, x: float, y: float) -> bool:
        return self.left <= x < self.right and self.top <= y < self.bottom

    def score(self, x: float, y: float) -> float:
        """1 inside; outside, up to 0.5, falling with the distance to the target."""
        if self.contains(x, y):
            return 1.0
        dx = max(self.left - x, 0.0, x - (self.right - 1))
        dy = max(self.top - y, 0.0, y - (self.bottom - 1))
        return 0.5 * (1.0 - math.hypot(dx, dy) / math.hypot(self.width, self.height))


def score_clicks(target: Target, clicks: list[tuple[float, float]]) -> Reward:
    """A trajectory's reward from the clicks the environment received: their mean score
    (0 without a click); a success when any landed on the target."""
    if not clicks:
        return Reward(0.0, False, note="no click")
    hits = sum(target.contains(x, y) for x, y in clicks)
    reward = sum(target.score(x, y) for x, y in clicks) / len(clicks)
    return Reward(reward, hits > 0, note=f"{hits}/{len(clicks)} click(s) on the target")


def page_html(target: Target) -> str:
    """The target as a web page: it keeps every click in `window.clicks`."""
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>target</title></head>
<body style="margin:0;width:{target.width}px;height:{target.height}px;background:#fff">
<div id="ok" style="position:absolute;left:{target.left}px;top:{target.top}px;
  width:{target.right - target.left}px;height:{target.bottom - target.top}px;
  background:#2e9e44;color:#fff;font:24px sans-serif;display:flex;
  align-items:center;justify-content:center">OK</div>
<script>
window.clicks = [];
document.addEventListener("mousedown", e => window.clicks.push([e.clientX, e.clientY]), true);
</script></body></html>
"""


class TargetApp:
    """target_app.py on one X display while the context is open; `clicks()` is what it
    received."""

    def __init__(self, display: str, log: Path, target: Target, start_timeout_s: float = 20.0):
        self.display = display
        self.log = log
        self.target = target
        self._timeout = start_timeout_s
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> TargetApp:
        self.log.write_text("")
        t = self.target
        sizes = (t.width, t.height, t.left, t.top, t.right, t.bottom)
        self._process = subprocess.Popen(
            [sys.executable, str(APP), str(self.log), *(str(v) for v in sizes)],
            env={**_environ(), "DISPLAY": self.display},
        )
        deadline = time.monotonic() + self._timeout
        while not any(r["type"] == "ready" for r in self._records()):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise RuntimeError(f"the target app did not start on {self.display}")
            time.sleep(0.05)
        return self

    def clicks(self) -> list[tuple[float, float]]:
        return [(r["x"], r["y"]) for r in self._records() if r["type"] == "click"]

    def _records(self) -> list[dict[str, Any]]:
        lines = self.log.read_text(encoding="utf-8").splitlines()
        # A line being written has no newline yet: complete lines only.
        return [json.loads(line) for line in lines if line.endswith("}")]

    def __exit__(self, *_: object) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


@contextlib.contextmanager
def target_environments(target: Target = Target()) -> Iterator[list[Environment]]:
    """One web page and one desktop app showing `target`, started and closed together."""
    with tempfile.TemporaryDirectory(prefix="rl-targets-") as scratch, contextlib.ExitStack() as s:
        folder = Path(scratch)
        page = folder / "target.html"
        page.write_text(page_html(target), encoding="utf-8")
        runs = iter(range(1_000_000))

        def app(display: str) -> TargetApp:
            return TargetApp(display, folder / f"app-{next(runs)}.jsonl", target)

        web = s.enter_context(
            WebEnvironment(page.as_uri(), width=target.width, height=target.height, name="web")
        )
        desktop = s.enter_context(
            XvfbEnvironment(app, width=target.width, height=target.height, name="desktop")
        )
        yield [web, desktop]


def target_tasks(count: int = 2) -> list[RolloutTask]:
    """`count` tasks (GRPO groups, at most len(TASKS)); each is rolled out n times, on
    whichever environment is free."""
    if not 1 <= count <= len(TASKS):
        raise ValueError(f"1 to {len(TASKS)} tasks, not {count}")
    return [RolloutTask(text) for text in TASKS[:count]]


def target_reward(target: Target = Target()) -> Any:
    """The reward function for run_rollouts: reads the clicks the page or app got."""

    def reward(finished: Finished) -> Reward:
        environment = finished.environment
        if isinstance(environment, XvfbEnvironment):
            app = environment.app_state
            assert isinstance(app, TargetApp)
            return score_clicks(target, app.clicks())
        page = getattr(finished.backend, "page", None)
        if page is None:
            raise TypeError(f"no reward for environment {environment.name}")
        clicks = [(float(x), float(y)) for x, y in page.evaluate("window.clicks || []")]
        return score_clicks(target, clicks)

    return reward
