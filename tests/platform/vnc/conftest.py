"""Fixtures for the VNC backend: a real Xvnc, a probe app on it, a backend connected to it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.platform.base import Backend
from holodesk.platform.select import open_backend
from tests.platform.vnc.rfb_server import FakeRfbServer
from tests.platform.vnc.servers import VncServer, xvnc
from tests.support.probe import ProbeApp

# These import python-xlib, a Linux-only dependency; the rest skip without Xvnc.
collect_ignore_glob = [] if sys.platform.startswith("linux") else ["test_vnc_capture.py", "bench_*"]


@pytest.fixture(scope="session")
def xvnc_server() -> Iterator[VncServer]:
    """One TigerVNC Xvnc (1280x800, no password) for the whole session."""
    with xvnc() as server:
        yield server


@pytest.fixture
def vnc(xvnc_server: VncServer) -> Iterator[Backend]:
    """The VNC backend connected to the session's Xvnc."""
    backend = open_backend("vnc", **xvnc_server.options())
    yield backend
    backend.close()


@pytest.fixture
def probe(xvnc_server: VncServer, tmp_path: Path) -> Iterator[ProbeApp]:
    """A fresh probe window on the Xvnc's display (overrides the Xvfb one)."""
    app = ProbeApp.start(xvnc_server.display, tmp_path / "probe.log")
    yield app
    app.stop()


@pytest.fixture
def fake_server() -> Iterator[FakeRfbServer]:
    """A scripted RFB server (not yet started: tests configure it, then start it)."""
    server = FakeRfbServer()
    yield server
    server.stop()
