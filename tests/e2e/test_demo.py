"""`holodesk demo`, the README's first command, run as a user would run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from holodesk.client.demo.processes import DemoError, FormAppProcess

pytestmark = [pytest.mark.x11, pytest.mark.e2e]


def test_demo_fills_the_form_through_the_whole_stack() -> None:
    # No --display: the demo starts its own Xvfb, form app and daemon (OCR policy),
    # from a terminal with no X display of its own.
    env = {key: value for key, value in os.environ.items() if key != "DISPLAY"}
    result = subprocess.run(
        [sys.executable, "-m", "holodesk.client", "demo"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "name='héllo wörld ñ € 日本', submitted='héllo wörld ñ € 日本'" in result.stdout
    assert "succeeded" in result.stderr
    # The emergency stop listens on the demo's own desktop.
    assert "no emergency-stop hotkey" not in result.stderr, result.stderr


def test_a_form_app_that_does_not_start_in_time_is_stopped_not_left_running(
    xvfb: str, tmp_path: Path
) -> None:
    form = FormAppProcess(xvfb, tmp_path / "state.json", start_timeout_s=0.0)
    before = set(form_apps())
    with pytest.raises(DemoError, match="did not start within 0 s"):
        form.__enter__()
    assert set(form_apps()) == before


def test_a_form_app_that_cannot_start_says_why(tmp_path: Path) -> None:
    with (
        pytest.raises(DemoError, match="exited early"),
        FormAppProcess(":4242", tmp_path / "state.json"),
    ):
        pass


def form_apps() -> list[int]:
    """Pids of running form apps, from /proc."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:  # gone meanwhile
            continue
        if b"holodesk.client.demo.form_app" in command:
            pids.append(int(entry.name))
    return pids
