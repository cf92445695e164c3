"""A win32 backend over FakeWinApi (Windows cannot run here): monitors of mixed DPI."""

from __future__ import annotations

import pytest

from holodesk.platform.base import Backend, Region
from holodesk.platform.windows import backend as win32
from holodesk.platform.windows.api import Monitor
from tests.platform.windows.fake_api import FakeWinApi

# A 4K primary at 200%, a 1080p monitor at 100% to its left (lower), a 1440p one at
# 150% above the primary: negative origins on both axes, three scales.
MONITORS = (
    Monitor(r"\\.\DISPLAY1", Region(0, 0, 3840, 2160), primary=True, dpi=192, name="Dell U2720Q"),
    Monitor(r"\\.\DISPLAY2", Region(-1920, 540, 1920, 1080), primary=False, dpi=96, name="HP E24"),
    Monitor(r"\\.\DISPLAY3", Region(640, -1440, 2560, 1440), primary=False, dpi=144, name="LG 27"),
)


@pytest.fixture
def api() -> FakeWinApi:
    return FakeWinApi(MONITORS)


@pytest.fixture
def backend(api: FakeWinApi) -> Backend:
    return win32.create(api=api)
