"""XvfbEnvironment's reset returns once its app shows a window, so a rollout's first
step sees the app: an app that never shows one is an error in the environment, not a
step on an empty screen; `app_window_s=None` is for an app that shows none."""

from __future__ import annotations

import time

import pytest

from holodesk.client.rollouts.environments.xvfb import AppWindowError, XvfbEnvironment
from holodesk.client.rollouts.factories import CommandApp
from holodesk.client.rollouts.trajectory import RolloutTask
from holodesk.platform.base import Region
from holodesk.platform.virtual_display import VirtualDisplay

pytestmark = [pytest.mark.x11, pytest.mark.timeout(120)]

TASK = RolloutTask("anything")


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
