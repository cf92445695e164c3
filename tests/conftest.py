"""Fixtures shared by every test folder (helpers live in tests/support)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.platform.base import Backend
from holodesk.platform.select import open_backend
from tests.support.probe import ProbeApp
from tests.support.xvfb import xvfb as start_xvfb


@pytest.fixture(scope="session", autouse=True)
def no_user_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Both CLIs read a TOML file from the user's config dir: the tests (and the
    processes they start) read an empty one, never the developer's own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
        for name in ("HOLODESK_CONFIG", "HOLODESKD_CONFIG"):
            patch.delenv(name, raising=False)
        yield


@pytest.fixture(scope="session")
def xvfb() -> Iterator[str]:
    """A 1280x800x24 Xvfb for the whole session; DISPLAY points at it meanwhile."""
    with start_xvfb() as display, pytest.MonkeyPatch.context() as patch:
        patch.setenv("DISPLAY", display)
        yield display


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
