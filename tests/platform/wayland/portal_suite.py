"""The checks every real portal desktop runs (mutter, KWin): frames, then the conformance suite.

A module imports `probe` and the `test_*` functions below and provides two
module fixtures: `desktop` (a HeadlessDesktop) and `backend` (the portal route
opened on it). The app is the Tk probe on the compositor's XWayland: its input
comes from the compositor's seat, which the portal's NotifyPointer* and
NotifyKeyboardKeysym calls feed, as every app's does.

`conformance(limits)` makes the suite's test for one compositor: `limits` maps a
case id to what that compositor itself cannot do through the portal (a strict
xfail, so a compositor that learns it makes the case fail until the entry goes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from holodesk.platform.base import Backend, MouseButton, Region
from tests.platform.conformance import CASES, Case, Motion, Press, TkTarget
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.support.probe import ProbeApp


def _rgb(colour: str) -> tuple[int, int, int]:
    return (int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16))


def _colours(image: Image.Image) -> set[Any]:
    return {image.getpixel((x, y)) for x in range(image.width) for y in range(image.height)}


def _swatch_inside(app: ProbeApp) -> Region:
    swatch = app.widgets["swatch"]
    return Region(swatch.x + 5, swatch.y + 5, swatch.width - 10, 20)


@pytest.fixture
def probe(desktop: HeadlessDesktop, backend: Backend, tmp_path: Path) -> Iterator[ProbeApp]:
    """A fresh Tk probe on the desktop's XWayland, shown where it stays."""
    app = ProbeApp.start(desktop.x_display, tmp_path / "probe.log", x=40, y=30)
    try:
        # Input during a window's map animation is lost (mutter's, KWin's): wait until
        # the stream shows the window drawn in place.
        region = _swatch_inside(app)
        TkTarget(backend, app).wait(
            lambda: _colours(backend.screen.grab(region)) == {_rgb(app.colors["swatch"])},
            "the probe window drawn in place",
        )
        yield app
    finally:
        app.stop()


def test_displays_come_from_the_stream(desktop: HeadlessDesktop, backend: Backend) -> None:
    (display,) = backend.screen.displays()
    assert display.bounds == Region(0, 0, desktop.width, desktop.height)
    assert display.scale_factor == 1.0


def test_frames_show_the_probe_window(backend: Backend, probe: ProbeApp) -> None:
    region = _swatch_inside(probe)
    image = backend.screen.grab(region)
    assert image.mode == "RGB"
    assert image.size == (region.width, region.height)
    assert _colours(image) == {_rgb(probe.colors["swatch"])}
    # Pixel positions kept: window colour, then swatch colour, across its left edge.
    swatch = probe.widgets["swatch"]
    row = backend.screen.grab(Region(swatch.x - 4, swatch.y + 10, 8, 1))
    assert [row.getpixel((i, 0)) for i in range(8)] == (
        [_rgb(probe.colors["window"])] * 4 + [_rgb(probe.colors["swatch"])] * 4
    )


def test_frames_follow_what_input_changes(backend: Backend, probe: ProbeApp) -> None:
    target = TkTarget(backend, probe)
    entry = probe.widgets["entry"]
    box = Region(entry.x + 2, entry.y + 2, entry.width - 4, entry.height - 4)
    before = backend.screen.grab(box).tobytes()
    target.focus("line")
    backend.input.type_text("WWWWWWWW")
    target.wait_text("line", "WWWWWWWW")
    target.wait(lambda: backend.screen.grab(box).tobytes() != before, "the typed text in a frame")


def test_drag_path(backend: Backend, probe: ProbeApp) -> None:
    # The conformance check wants every point of a fast drag as a motion event;
    # compositors merge the motions that arrive within one frame (mutter's clutter
    # does), so here the app must see a part of the path, in order, ending where the
    # drag ends, with the button held throughout.
    target = TkTarget(backend, probe)
    pad = target.pad()
    path = [(pad.x + 20 + 40 * i, pad.y + 30 + 25 * i) for i in range(6)]
    backend.input.drag(path, duration_s=0.5)
    target.wait(lambda: [p for p in target.of(Press) if p.kind == "release"], "the release")
    assert target.of(Press) == [
        Press("press", MouseButton.LEFT, *path[0]),
        Press("release", MouseButton.LEFT, *path[-1]),
    ]
    held = [(m.x, m.y) for m in target.of(Motion) if m.left_held]
    assert held
    assert held[-1] == path[-1]
    remaining = iter(path[1:])
    assert all(point in remaining for point in held), f"{held} is not a part of {path}"


def conformance(limits: Mapping[str, str]) -> Callable[..., None]:
    """The conformance suite over CASES for the module's `backend`, with `limits` xfailed.

    drag-path runs as test_drag_path above (motion merged per frame).
    """
    unknown = set(limits) - {case.id for case in CASES}
    if unknown:
        raise ValueError(f"no conformance cases named {sorted(unknown)}")

    def marks(case: Case) -> Any:
        if case.id == "drag-path":
            return pytest.mark.skip(reason="test_drag_path checks it: motion is merged per frame")
        if case.id in limits:
            return pytest.mark.xfail(reason=limits[case.id], strict=True)
        return ()

    @pytest.mark.parametrize(
        "case", [pytest.param(case, id=case.id, marks=marks(case)) for case in CASES]
    )
    def test_conformance(case: Case, backend: Backend, probe: ProbeApp) -> None:
        case.run(TkTarget(backend, probe))

    return test_conformance
