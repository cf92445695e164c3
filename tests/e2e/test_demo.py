"""`holodesk demo`, the README's first command, run as a user would run it."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = [pytest.mark.x11, pytest.mark.e2e]


def test_demo_fills_the_form_through_the_whole_stack() -> None:
    # No --display: the demo starts its own Xvfb, form app and daemon (OCR policy).
    result = subprocess.run(
        [sys.executable, "-m", "holodesk.client", "demo"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "name='héllo wörld ñ € 日本', submitted='héllo wörld ñ € 日本'" in result.stdout
    assert "succeeded" in result.stderr
