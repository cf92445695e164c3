"""A portal's monitors put in logical units by the compositor's outputs (pure logic),
and the asking that never hangs or fails a session. The real compositors' answers
are in the KWin scale module and the sway scale tests."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from holodesk.platform.base import Region
from holodesk.platform.wayland import output_geometry
from holodesk.platform.wayland.layout import Monitor
from holodesk.platform.wayland.output_geometry import compositor_outputs, logical_by_outputs
from holodesk.platform.wlroots.outputs import Output

AT_1_5 = Output("Virtual-0", Region(0, 0, 1280, 800), 1920, 1200)


def test_a_stream_sized_as_its_scaled_outputs_pixels_gets_its_logical_size() -> None:
    """xdg-desktop-portal-kde 5.27's report at 1.5: the output's pixels as the size."""
    assert logical_by_outputs([Monitor(37, 0, 0, 1920, 1200, "s")], [AT_1_5]) == (
        Monitor(37, 0, 0, 1280, 800, "s"),
    )


def test_streams_already_logical_or_unscaled_are_kept() -> None:
    logical = Monitor(37, 0, 0, 1280, 800)
    assert logical_by_outputs([logical], [AT_1_5]) == (logical,)
    unscaled = Output("HDMI-A-1", Region(0, 0, 1920, 1200), 1920, 1200)
    pixels = Monitor(37, 0, 0, 1920, 1200)
    assert logical_by_outputs([pixels], [unscaled]) == (pixels,)
    assert logical_by_outputs([pixels], []) == (pixels,)


def test_side_by_side_outputs_are_matched_by_logical_or_physical_origin() -> None:
    left = AT_1_5
    right = Output("Virtual-1", Region(1280, 0, 1280, 800), 1920, 1200)
    at_logical = [Monitor(1, 0, 0, 1920, 1200), Monitor(2, 1280, 0, 1920, 1200)]
    at_physical = [Monitor(1, 0, 0, 1920, 1200), Monitor(2, 1920, 0, 1920, 1200)]
    expected = (Monitor(1, 0, 0, 1280, 800), Monitor(2, 1280, 0, 1280, 800))
    assert logical_by_outputs(at_logical, [left, right]) == expected
    assert logical_by_outputs(at_physical, [left, right]) == expected


def test_a_stream_that_matches_no_output_is_kept() -> None:
    elsewhere = Monitor(5, 640, 0, 1920, 1200)  # an output's pixel size, but not where it is
    window = Monitor(6, 0, 0, 800, 600)
    assert logical_by_outputs([elsewhere, window], [AT_1_5]) == (elsewhere, window)


def test_no_compositor_to_ask_keeps_the_portals_word(tmp_path: Path) -> None:
    assert compositor_outputs({}) == ()
    assert compositor_outputs({"WAYLAND_DISPLAY": str(tmp_path / "wayland-9")}) == ()


def test_a_compositor_that_never_answers_costs_the_bound_not_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output_geometry, "ASK_TIMEOUT_S", 0.5)
    path = tmp_path / "wayland-silent"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.bind(str(path))
        silent.listen(1)
        started = time.monotonic()
        assert compositor_outputs({"WAYLAND_DISPLAY": str(path)}) == ()
        assert time.monotonic() - started < 5
