"""Window steps: activate_window and close_window, with xdotool on the task's display.

The task's Xvfb has no window manager, so "activate" is what one would do: raise
the window and give it the keyboard focus (xdotool's windowactivate needs a window
manager's _NET_ACTIVE_WINDOW)."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Mapping
from typing import Any

from holodesk.client.eval.tasks.context import StepError, TaskContext
from holodesk.client.eval.tasks.kinds import Step

FIND_TIMEOUT_S = 10.0


def find_window(context: TaskContext, parameters: Mapping[str, Any]) -> str:
    """The id of the first visible window whose name (or class) contains the text
    (equals it with `strict`); waits for it up to FIND_TIMEOUT_S."""
    name = str(parameters["window_name"])
    pattern = f"^{re.escape(name)}$" if parameters.get("strict") else re.escape(name)
    if name == "Google Chrome" and not parameters.get("by_class"):
        # OSWorld's VMs run Google Chrome; here it is Chromium, whose windows say so.
        pattern = "Google Chrome|Chromium$" if not parameters.get("strict") else "^Chromium$"
    field = "--class" if parameters.get("by_class") else "--name"
    deadline = time.monotonic() + FIND_TIMEOUT_S
    while True:
        ran = context.run(
            ["xdotool", "search", "--onlyvisible", field, pattern], timeout_s=FIND_TIMEOUT_S
        )
        ids = ran.stdout.split()
        if ids:
            return ids[0]
        if time.monotonic() >= deadline:
            what = "class" if parameters.get("by_class") else "name"
            raise StepError(f"no window whose {what} matches {name!r} within {FIND_TIMEOUT_S:g} s")
        time.sleep(0.2)


def activate_window(context: TaskContext, parameters: Mapping[str, Any]) -> None:
    window = find_window(context, parameters)
    for command in (
        ["xdotool", "windowraise", window],
        ["xdotool", "windowfocus", "--sync", window],
    ):
        try:
            ran = context.run(command, timeout_s=FIND_TIMEOUT_S)
        except subprocess.TimeoutExpired as error:
            raise StepError(f"{' '.join(command)} did not finish") from error
        if ran.returncode != 0:
            raise StepError(f"{' '.join(command)} failed: {ran.stderr.strip()}")


def close_window(context: TaskContext, parameters: Mapping[str, Any]) -> None:
    window = find_window(context, parameters)
    ran = context.run(["xdotool", "windowclose", window], timeout_s=FIND_TIMEOUT_S)
    if ran.returncode != 0:
        ran = context.run(["xdotool", "windowkill", window], timeout_s=FIND_TIMEOUT_S)
        if ran.returncode != 0:
            raise StepError(f"could not close window {window}: {ran.stderr.strip()}")


STEPS: Mapping[str, Step] = {
    "activate_window": Step(activate_window, ("window_name",)),
    "close_window": Step(close_window, ("window_name",)),
}
