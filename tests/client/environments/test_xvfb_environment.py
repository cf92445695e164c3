"""XvfbEnvironment's reset returns once its app shows a window, so a rollout's first
step sees the app: an app that never shows one is an error in the environment, not a
step on an empty screen; `app_window_s=None` is for an app that shows none."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from holodesk.client.rollouts.environments.xvfb import AppWindowError, XvfbEnvironment
from holodesk.client.rollouts.factories import CommandApp
from holodesk.client.rollouts.trajectory import RolloutTask
from holodesk.platform.base import Region
from holodesk.platform.virtual_display import VirtualDisplay

pytestmark = [pytest.mark.x11, pytest.mark.timeout(120)]

TASK = RolloutTask("anything")
# A Tk window without the window manager's say (override-redirect) at GEOMETRY.
OVERRIDE_REDIRECT_APP = """
import sys, tkinter as tk
root = tk.Tk()
root.overrideredirect(True)
root.geometry(sys.argv[1])
root.mainloop()
"""


def test_the_first_frame_after_reset_shows_the_app() -> None:
    with XvfbEnvironment(CommandApp(("xterm",)), width=640, height=400) as environment:
        for _ in range(3):  # the app restarted each time, each time on screen at once
            backend = environment.reset(TASK)
            try:
                frame = backend.screen.grab(Region(0, 0, 640, 400))
                assert frame.getcolors(1) is None, "the first frame is one flat colour"
            finally:
                backend.close()


def test_an_app_that_shows_no_window_is_an_error_of_the_environment() -> None:
    environment = XvfbEnvironment(CommandApp(("sleep", "60")), app_window_s=0.5, name="quiet")
    with environment, pytest.raises(AppWindowError, match="quiet: the app showed no window"):
        environment.reset(TASK)


def test_without_a_wait_reset_returns_at_once() -> None:
    environment = XvfbEnvironment(CommandApp(("sleep", "60")), app_window_s=None)
    with environment:
        started = time.monotonic()
        environment.reset(TASK).close()
        assert time.monotonic() - started < 5


def test_a_display_without_a_window_says_so_in_time() -> None:
    with VirtualDisplay(320, 240) as display:
        started = time.monotonic()
        assert display.wait_for_window(0.3) is False
        assert 0.3 <= time.monotonic() - started < 5


@pytest.mark.parametrize(
    ("geometry", "counts"),
    [("320x240+0+0", True), ("120x40+10+10", False)],
    ids=["a kiosk app covering the screen counts", "a splash or tooltip does not"],
)
def test_an_override_redirect_window_counts_when_it_covers_the_screen(
    geometry: str, counts: bool
) -> None:
    with VirtualDisplay(320, 240) as display:
        app = subprocess.Popen(
            [sys.executable, "-c", OVERRIDE_REDIRECT_APP, geometry],
            env={**os.environ, "DISPLAY": display.display},
        )
        try:
            assert display.wait_for_window(3 if counts else 1.5) is counts
        finally:
            app.kill()
            app.wait()
