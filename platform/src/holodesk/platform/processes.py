"""Stopping the helper processes holodesk starts (Xvfb, a daemon, an app)."""

from __future__ import annotations

import subprocess
from typing import Any


def stop_process(process: subprocess.Popen[Any], timeout_s: float = 5.0) -> None:
    """Terminate `process`, killing it if it lingers past `timeout_s`; reaps it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
