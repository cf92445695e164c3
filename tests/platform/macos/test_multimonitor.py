"""Clicks land on the chosen display: three displays, two scales, negative origins.

macOS cannot run here: FakeQuartzApi records the global points each event is posted
at; the expected points are worked out by hand from the displays' point bounds.
"""

from __future__ import annotations

import pytest

from holodesk.platform.base import Backend
from holodesk.platform.macos import cg
from holodesk.platform.macos.api import MouseEvent
from holodesk.platform.macos.geometry import DesktopMap
from tests.platform.macos.conftest import ABOVE, DISPLAYS, LEFT, RETINA
from tests.platform.macos.fake_api import FakeQuartzApi


@pytest.mark.parametrize(
    ("display_id", "centre", "point"),
    [
        # Retina 3024x1964 px at (0, 0): pixel (1512, 982) is point (1512.5/2, 982.5/2).
        (str(RETINA.display_id), (1512, 982), (756.25, 491.25)),
        # 1080p at points (-1920, 100), pixels (-1920, 200): one pixel per point.
        (str(LEFT.display_id), (-960, 740), (-959.5, 640.5)),
        # 4K at points (-400, -1440), pixels (-800, -2880), scale 2.
        (str(ABOVE.display_id), (1760, -1440), (880.25, -719.75)),
    ],
)
def test_a_click_at_the_centre_of_each_display_lands_there(
    backend: Backend,
    api: FakeQuartzApi,
    display_id: str,
    centre: tuple[int, int],
    point: tuple[float, float],
) -> None:
    display = next(d for d in backend.screen.displays() if d.display_id == display_id)
    bounds = display.bounds
    assert (bounds.x + bounds.width // 2, bounds.y + bounds.height // 2) == centre
    backend.input.click(*centre)
    posted = [(e.type, e.x, e.y) for e in api.events if isinstance(e, MouseEvent)]
    assert posted == [
        (cg.MOUSE_MOVED, *point),
        (cg.LEFT_MOUSE_DOWN, *point),
        (cg.LEFT_MOUSE_UP, *point),
    ]
    desktop = DesktopMap(DISPLAYS)
    assert str(desktop.at_point(*point).display.display_id) == display_id
    assert backend.input.cursor_position() == centre


def test_every_corner_pixel_of_every_display_round_trips(
    backend: Backend, api: FakeQuartzApi
) -> None:
    for display in backend.screen.displays():
        b = display.bounds
        for corner in [
            (b.x, b.y),
            (b.right - 1, b.y),
            (b.x, b.bottom - 1),
            (b.right - 1, b.bottom - 1),
        ]:
            backend.input.move(*corner)
            assert backend.input.cursor_position() == corner


def test_display_ids_are_the_cg_display_ids_and_stable(backend: Backend) -> None:
    first = [d.display_id for d in backend.screen.displays()]
    assert first == [str(RETINA.display_id), str(LEFT.display_id), str(ABOVE.display_id)]
    assert [d.display_id for d in backend.screen.displays()] == first
