"""Clicks land on the chosen monitor: three monitors, three scales, negative origins.

Windows cannot run here: FakeWinApi records the absolute coordinates SendInput would
get, and each is decoded both ways Windows may decode it.
"""

from __future__ import annotations

import pytest

from holodesk.platform.base import Backend, DisplayInfo
from holodesk.platform.windows import structs as s
from holodesk.platform.windows.coords import from_normalized_floor, from_normalized_scaled
from tests.platform.windows.fake_api import FakeWinApi


def landed(api: FakeWinApi) -> list[tuple[int, int]]:
    """Where each recorded absolute move lands, asserting both decodings agree."""
    screen = api.virtual_screen()
    points = []
    for event in api.sent:
        if event.type == s.INPUT_MOUSE and event.mi.dwFlags & s.MOUSEEVENTF_ABSOLUTE:
            floor = (
                from_normalized_floor(event.mi.dx, screen.x, screen.width),
                from_normalized_floor(event.mi.dy, screen.y, screen.height),
            )
            scaled = (
                from_normalized_scaled(event.mi.dx, screen.x, screen.width),
                from_normalized_scaled(event.mi.dy, screen.y, screen.height),
            )
            assert floor == scaled
            points.append(floor)
    return points


def by_id(backend: Backend, display_id: str) -> DisplayInfo:
    return next(d for d in backend.screen.displays() if d.display_id == display_id)


@pytest.mark.parametrize("display_id", [r"\\.\DISPLAY1", r"\\.\DISPLAY2", r"\\.\DISPLAY3"])
def test_a_click_at_the_centre_of_each_display_lands_there(
    backend: Backend, api: FakeWinApi, display_id: str
) -> None:
    bounds = by_id(backend, display_id).bounds
    centre = (bounds.x + bounds.width // 2, bounds.y + bounds.height // 2)
    backend.input.click(*centre)
    assert landed(api) == [centre]
    assert backend.input.cursor_position() == centre
    kinds = [int(e.mi.dwFlags) for e in api.sent[1:]]
    assert kinds == [s.MOUSEEVENTF_LEFTDOWN, s.MOUSEEVENTF_LEFTUP]


def test_every_corner_pixel_of_every_display_is_reachable(
    backend: Backend, api: FakeWinApi
) -> None:
    corners = []
    for display in backend.screen.displays():
        b = display.bounds
        corners += [
            (b.x, b.y),
            (b.right - 1, b.y),
            (b.x, b.bottom - 1),
            (b.right - 1, b.bottom - 1),
        ]
    for corner in corners:
        backend.input.move(*corner)
    assert landed(api) == corners


def test_a_display_chosen_by_id_keeps_its_geometry_between_reads(backend: Backend) -> None:
    first = {d.display_id: d for d in backend.screen.displays()}
    second = {d.display_id: d for d in backend.screen.displays()}
    assert first == second
    assert first[r"\\.\DISPLAY3"].bounds.y == -1440
