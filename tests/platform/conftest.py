"""Fixtures for the platform tests: an X11 backend and a probe app on the session Xvfb."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.platform.base import Backend
from holodesk.platform.select import open_backend
from tests.support.probe import ProbeApp

# Before the test modules import it: its checks' failures then show the values compared.
pytest.register_assert_rewrite("tests.platform.conformance")

# The X11 modules import python-xlib, a Linux-only dependency.
collect_ignore_glob = [] if sys.platform.startswith("linux") else ["test_x11_*.py"]


@pytest.fixture
def x11(xvfb: str) -> Iterator[Backend]:
    """The real X11 backend, connected to the session's Xvfb."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the X11 backend runs on Linux")
    backend = open_backend("x11", display=xvfb)
    yield backend
    backend.close()


@pytest.fixture
def probe(xvfb: str, tmp_path: Path) -> Iterator[ProbeApp]:
    """A fresh probe window (Tk) that logs every input event it receives."""
    app = ProbeApp.start(xvfb, tmp_path / "probe.log")
    yield app
    app.stop()
