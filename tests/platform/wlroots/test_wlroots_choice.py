"""The backend choice on a real sway, and the output geometry's rules (pure)."""

from __future__ import annotations

import os

import pytest

from holodesk.client.doctor.route import check_route
from holodesk.platform.base import Region
from holodesk.platform.select import ENV_VAR, default_backend_name, open_backend
from holodesk.platform.wlroots.outputs import POINTER_SUBUNITS, Layout, Output
from tests.platform.wlroots.sway import Sway


@pytest.mark.wlroots
def test_a_sway_session_gets_the_wlroots_backend(sway: Sway) -> None:
    """Proves: with WAYLAND_DISPLAY naming a compositor that offers screencopy and the
    virtual devices, the default is wlroots, XWayland's DISPLAY set or not."""
    assert default_backend_name("linux", sway.environ()) == "wlroots"
    assert default_backend_name("linux", {**sway.environ(), "DISPLAY": sway.x_display}) == "wlroots"


@pytest.mark.wlroots
def test_open_backend_on_sway_beside_an_xvfb_takes_wlroots_and_doctor_says_so(
    sway: Sway, xvfb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Proves: with sway's WAYLAND_DISPLAY and an unrelated Xvfb's DISPLAY, open_backend()
    with no name opens the wlroots backend on sway (its outputs, not the Xvfb's
    screen), and the doctor's route finding names the same choice."""
    for name in (ENV_VAR, "HOLODESK_WAYLAND_INPUT", "XDG_SESSION_TYPE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WAYLAND_DISPLAY", sway.wayland_socket)
    monkeypatch.setenv("DISPLAY", xvfb)
    backend = open_backend()
    try:
        assert backend.name == "wlroots"
        assert [d.display_id for d in backend.screen.displays()] == ["HEADLESS-1"]
    finally:
        backend.close()
    finding = check_route(None, os.environ)
    assert finding is not None
    assert finding.detail.startswith("wlroots (the wlroots backend): ")


def test_a_wayland_session_without_the_protocols_keeps_the_old_choice() -> None:
    """Proves: a WAYLAND_DISPLAY that names no compositor (a stale variable) is no
    Wayland session: x11 beside an X server, else wayland (its portal needs no socket)."""
    missing = {"WAYLAND_DISPLAY": "/nonexistent/wayland-9"}
    assert default_backend_name("linux", missing) == "wayland"
    assert default_backend_name("linux", {**missing, "DISPLAY": ":0"}) == "x11"


MIXED = Layout(
    (
        Output("A", Region(0, 0, 1280, 800), 1920, 1200),  # 1.5
        Output("B", Region(1280, 0, 800, 640), 1000, 800),  # 1.25
    )
)


def test_mixed_scales_neither_overlap_nor_lose_pixels() -> None:
    """Proves: origins scale by the largest factor, so B starts where A's pixels end."""
    a, b = MIXED.displays()
    assert (a.bounds, a.scale_factor) == (Region(0, 0, 1920, 1200), 1.5)
    assert (b.bounds, b.scale_factor) == (Region(1920, 0, 1000, 800), 1.25)
    assert MIXED.output_at(1919, 0).name == "A"
    assert MIXED.output_at(1920, 0).name == "B"


def test_a_point_maps_to_its_pixels_logical_centre() -> None:
    """Proves: physical pixel p of an output at 1.5 is logical (p + 0.5) / 1.5, and
    the absolute motion carries it in 1/1024 logical pixels over the layout's box."""
    assert MIXED.to_logical(451, 0) == pytest.approx((451.5 / 1.5, 0.5 / 1.5))
    assert MIXED.to_logical(1920, 10) == pytest.approx((1280 + 0.5 / 1.25, 10.5 / 1.25))
    x, y, x_extent, y_extent = MIXED.pointer_motion(451, 0)
    assert y == round(0.5 / 1.5 * POINTER_SUBUNITS)
    assert (x_extent, y_extent) == (2080 * POINTER_SUBUNITS, 800 * POINTER_SUBUNITS)
    assert x == round(451.5 / 1.5 * POINTER_SUBUNITS)


def test_points_off_every_output_are_refused() -> None:
    """Proves: a pixel below the shorter output is on no monitor (ValueError)."""
    with pytest.raises(ValueError, match="on no monitor"):
        MIXED.output_at(2000, 900)
