"""Fixtures for the client's tests: fake backends and a scripted daemon."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from holodesk.platform.backends import fake
from holodesk.platform.base import DisplayInfo, Region

from .scripted import Script, ScriptedDaemon

# A primary display, and a HiDPI one left of and above it (negative origin, scale 2.0).
TWO_DISPLAYS = (
    DisplayInfo("main", Region(0, 0, 1280, 800), 1.0, primary=True, name="main"),
    DisplayInfo("retina", Region(-2560, -200, 2560, 1600), 2.0, name="retina"),
)


@pytest.fixture
def backend() -> fake.FakeBackend:
    return fake.create(displays=TWO_DISPLAYS)


@pytest.fixture
def daemon() -> Iterator[Callable[[Script], ScriptedDaemon]]:
    started: list[ScriptedDaemon] = []

    def start(script: Script) -> ScriptedDaemon:
        server = ScriptedDaemon(script)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
