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

import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from holodesk.platform.base import Backend, MouseButton, Region
from tests.platform.conformance import (
    CASES,
    Case,
    Motion,
    Observed,
    Press,
    TkTarget,
    tk_observed,
)
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.support.probe import ProbeApp, server_key_names


def _rgb(colour: str) -> tuple[int, int, int]:
    return (int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16))


def _colours(image: Image.Image) -> set[Any]:
    return {image.getpixel((x, y)) for x in range(image.width) for y in range(image.height)}


def _swatch_inside(app: ProbeApp) -> Region:
    swatch = app.widgets["swatch"]
    return Region(swatch.x + 5, swatch.y + 5, swatch.width - 10, 20)


class SettledTarget(TkTarget):
    """The Tk probe, minus the events of the click that proved it takes input."""

    def __init__(self, backend: Backend, probe: ProbeApp, skip: int) -> None:
        super().__init__(backend, probe)
        self._skip = skip

    def observed(self) -> list[Observed]:
        events = self.probe.events()[self._skip :]
        return tk_observed(server_key_names(events, self.probe.display))


@pytest.fixture
def probe(desktop: HeadlessDesktop, backend: Backend, tmp_path: Path) -> Iterator[ProbeApp]:
    """A fresh Tk probe on the desktop's XWayland, shown where it stays."""
    app = ProbeApp.start(desktop.x_display, tmp_path / "probe.log", x=40, y=30)
    try:
        if desktop.kind == "mutter":
            # Input during mutter's map animation is lost: wait until the stream shows
            # the window drawn in place (KWin's stream has no pixels: see its tests).
            region = _swatch_inside(app)
            TkTarget(backend, app).wait(
                lambda: _colours(backend.screen.grab(region)) == {_rgb(app.colors["swatch"])},
                "the probe window drawn in place",
            )
        yield app
    finally:
        app.stop()


@pytest.fixture
def target(backend: Backend, probe: ProbeApp) -> Iterator[SettledTarget]:
    """The probe once a click on its label has arrived whole (so clicks land now).

    The backend is the module's: whatever a failed check left held is released
    afterwards, so one failure stays one.
    """
    label = probe.widgets["label"].center
    released = Press("release", MouseButton.LEFT, *label)
    whole = TkTarget(backend, probe)
    deadline = time.monotonic() + 20
    while True:
        backend.input.click(*label)
        try:
            whole.wait(
                lambda: released in whole.of(Press),
                "a click on the label",
                timeout_s=1,
            )
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
    try:
        yield SettledTarget(backend, probe, len(probe.events()))
    finally:
        backend.input.release_all()


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


def test_frames_follow_what_input_changes(
    backend: Backend, probe: ProbeApp, target: SettledTarget
) -> None:
    entry = probe.widgets["entry"]
    box = Region(entry.x + 2, entry.y + 2, entry.width - 4, entry.height - 4)
    before = backend.screen.grab(box).tobytes()
    target.focus("line")
    backend.input.type_text("WWWWWWWW")
    target.wait_text("line", "WWWWWWWW")
    target.wait(lambda: backend.screen.grab(box).tobytes() != before, "the typed text in a frame")


def test_drag_path(backend: Backend, target: SettledTarget) -> None:
    # The conformance check wants every point of a fast drag as a motion event; here
    # motions that arrive close together are merged on the way (the compositor batches
    # them per frame, and Tk on XWayland collapses a batch it is handed), so the app
    # must see a part of the path, in order, ending where the drag ends, with the
    # button held throughout.
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

    drag-path runs as test_drag_path above (close motions are merged on the way).
    """
    unknown = set(limits) - {case.id for case in CASES}
    if unknown:
        raise ValueError(f"no conformance cases named {sorted(unknown)}")

    def marks(case: Case) -> Any:
        if case.id == "drag-path":
            return pytest.mark.skip(reason="test_drag_path checks it: motions are merged")
        if case.id in limits:
            return pytest.mark.xfail(reason=limits[case.id], strict=True)
        return ()

    @pytest.mark.parametrize(
        "case", [pytest.param(case, id=case.id, marks=marks(case)) for case in CASES]
    )
    def test_conformance(case: Case, target: SettledTarget) -> None:
        case.run(target)

    return test_conformance
