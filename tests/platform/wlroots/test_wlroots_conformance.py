"""The platform conformance suite through the wlroots backend on a real headless sway.

Every button, click count, modifier, move, drag, four scroll directions, chords,
key down/up, Unicode, format characters and multi-line text, as the Tk probe on
sway's XWayland receives them from our virtual pointer and keyboard.

One retry, on a fresh probe window, when a check's wait times out or an
assertion fails the first time: sway 1.7's XWayland sometimes stops passing
button events to an X11 window (motion still arrives) once its pointer focus has
been through bare desktop or a focus change, more often on a loaded machine; native
Wayland windows get every event (see test_wlroots_scale). The backdrop window
(conftest) makes it rare, not impossible. A deterministic failure fails both
attempts, and so the case.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from holodesk.platform.select import open_backend
from tests.platform.conformance import CASES, Case, TkTarget
from tests.platform.wlroots.sway import Sway
from tests.support.probe import ProbeApp

pytestmark = pytest.mark.wlroots


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_conformance(case: Case, sway: Sway, backdrop: None, tmp_path: Path) -> None:
    for attempt in (1, 2):
        probe = ProbeApp.start(sway.x_display, tmp_path / f"probe{attempt}.log", x=0, y=0)
        try:
            factory = lambda: open_backend("wlroots", socket=sway.wayland_socket)  # noqa: E731
            with TkTarget.open(factory, probe) as target:
                try:
                    case.run(target)
                    return
                except (AssertionError, TimeoutError):  # a check's assert, or a probe wait
                    if attempt == 2:
                        raise
        finally:
            probe.stop()
