"""One whole agent run on a real headless KDE (KWin 5.27 --virtual): daemon, `holodesk run`, portal.

`holodesk run` runs in the desktop's environment, XWayland's DISPLAY included
(tests/e2e/portal_desktop_run.py): KWin offers none of the wlroots protocols, so
the client chooses the wayland backend itself, whose portal route starts a
RemoteDesktop session through xdg-desktop-portal-kde (no dialog here: see
tests/platform/wayland/test_portal_kwin_consent.py) and types through
NotifyKeyboardKeysym. This KWin's outputs are headless, so its stream sends no
frame: the route sees that and reads KWin's ScreenShot2, which this KWin lets
anyone use (KWIN_SCREENSHOT_NO_PERMISSION_CHECKS=1, as a headless KWin for
agents runs). The app is the Tk probe on KWin's XWayland.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.platform.wayland.kwin_screenshot import KWinScreenshots
from tests.e2e.portal_desktop_run import (
    assert_probe_exercised,
    run_holodesk,
    swatch_colour,
    wait,
)
from tests.platform.wayland.conftest import start_desktop
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.support.probe import ProbeApp

pytestmark = [pytest.mark.e2e, pytest.mark.portal_desktop]


@pytest.fixture
def desktop() -> Iterator[HeadlessDesktop]:
    running = start_desktop("kwin", screenshots_for_anyone=True)
    yield running
    running.stop()


@pytest.fixture
def probe(desktop: HeadlessDesktop, tmp_path: Path) -> Iterator[ProbeApp]:
    """The Tk probe on KWin's XWayland, once KWin's own screenshot shows it in place."""
    app = ProbeApp.start(desktop.x_display, tmp_path / "probe.log", x=40, y=30)
    swatch = app.widgets["swatch"]
    eyes = KWinScreenshots(desktop.bus_address)
    try:
        wait(
            lambda: eyes.take().getpixel(swatch.center) == swatch_colour(app),
            "the probe window drawn in place",
        )
        yield app
    finally:
        eyes.close()
        app.stop()


async def test_holodesk_run_on_kde_drives_the_probe_through_the_portal(
    desktop: HeadlessDesktop, probe: ProbeApp
) -> None:
    """Proves: `holodesk run` on a KDE session with headless outputs takes the wayland
    backend's portal route, sees the frames KWin's ScreenShot2 gives, and the run
    succeeds: the app got the click on OK and the typed text, in its entry."""
    result = await run_holodesk(desktop, probe)
    assert_probe_exercised(result, probe)
    assert "through KWin's ScreenShot2 instead" in result.stderr, result.stderr
