"""The stand-in container runtime for every test here (stand_in.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.client.environments.stand_in import StandIn, install_stand_in
from tests.platform.vnc.servers import require


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[StandIn]:
    """Whatever a test leaves running is stopped after it."""
    require("Xvnc", "tigervnc-standalone-server")
    require("vncpasswd", "tigervnc-tools")
    runtime = install_stand_in(tmp_path)
    try:
        yield runtime
    finally:
        runtime.remove_all()
