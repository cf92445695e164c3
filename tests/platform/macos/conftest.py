"""A quartz backend over FakeQuartzApi (macOS cannot run here): mixed-scale displays."""

from __future__ import annotations

import pytest

from holodesk.platform.base import Backend
from holodesk.platform.macos import backend as quartz
from holodesk.platform.macos.api import PointRect, QuartzDisplay
from holodesk.platform.macos.permissions import HostProcess
from tests.platform.macos.fake_api import FakeQuartzApi

# A MacBook's Retina panel (main, scale 2), a 1080p monitor at scale 1 to its left,
# and a 4K monitor at "looks like 2560x1440" (scale 2) above, straddling x = 0.
RETINA = QuartzDisplay(1, PointRect(0, 0, 1512, 982), 3024, 1964, main=True, name="Built-in")
LEFT = QuartzDisplay(69733382, PointRect(-1920, 100, 1920, 1080), 1920, 1080, main=False, name="HP")
ABOVE = QuartzDisplay(
    722475457, PointRect(-400, -1440, 2560, 1440), 5120, 2880, main=False, name="LG 4K"
)
DISPLAYS = (LEFT, RETINA, ABOVE)
TERMINAL = HostProcess(
    {"TERM_PROGRAM": "Apple_Terminal"}, parent_pid=4242, executable="/usr/bin/python3"
)


@pytest.fixture
def api() -> FakeQuartzApi:
    return FakeQuartzApi(DISPLAYS)


@pytest.fixture
def backend(api: FakeQuartzApi) -> Backend:
    return quartz.create(api=api, host=TERMINAL)
