"""One whole agent run on a real headless GNOME (mutter 43): daemon, `holodesk run`, the portal.

`holodesk run` runs in the desktop's environment, XWayland's DISPLAY included
(tests/e2e/portal_desktop_run.py): mutter offers none of the wlroots protocols,
so the client chooses the wayland backend itself, whose portal route starts a
RemoteDesktop session (the GnomePerson answers its dialog, which Debian 12's
RemoteDesktop version 1 shows at every start), reads frames from that session's
PipeWire stream and types through NotifyKeyboardKeysym. The app is the Tk probe
on mutter's XWayland; every desktop assertion reads its log. The same run on
KDE is test_kwin_run.py.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.portal_desktop_run import (
    assert_probe_exercised,
    run_holodesk,
    swatch_colour,
    wait,
)
from tests.platform.wayland.conftest import start_desktop
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.platform.wayland.gnome_person import GnomePerson
from tests.support.probe import ProbeApp

pytestmark = [pytest.mark.e2e, pytest.mark.portal_desktop]


@pytest.fixture
def desktop() -> Iterator[HeadlessDesktop]:
    running = start_desktop("mutter")
    yield running
    running.stop()


@pytest.fixture
def person(desktop: HeadlessDesktop) -> Iterator[GnomePerson]:
    someone = GnomePerson(desktop)
    yield someone
    someone.close()


@pytest.fixture
def probe(desktop: HeadlessDesktop, person: GnomePerson, tmp_path: Path) -> Iterator[ProbeApp]:
    """The Tk probe on mutter's XWayland, once the screen shows it drawn in place
    (input during mutter's map animation is lost)."""
    app = ProbeApp.start(desktop.x_display, tmp_path / "probe.log", x=40, y=30)
    swatch = app.widgets["swatch"]
    try:
        wait(
            lambda: person.screen().convert("RGB").getpixel(swatch.center) == swatch_colour(app),
            "the probe window drawn in place",
        )
        yield app
    finally:
        app.stop()


async def test_holodesk_run_on_gnome_drives_the_probe_through_the_portal(
    desktop: HeadlessDesktop, person: GnomePerson, probe: ProbeApp, tmp_path: Path
) -> None:
    """Proves: `holodesk run` on a GNOME session takes the wayland backend's portal
    route, a person allows it once, and the run succeeds: the app got the click on
    OK and the typed text, in its entry."""
    failures: list[BaseException] = []

    def answer() -> None:
        try:
            person.allow_remote_desktop(evidence=tmp_path / "dialog.png")
        except BaseException as error:  # re-raised below, in the test's thread
            failures.append(error)

    person_thread = threading.Thread(target=answer, name="gnome-person")
    person_thread.start()
    try:
        result = await run_holodesk(desktop, probe)
    finally:
        await asyncio.to_thread(person_thread.join)
    assert not failures, failures
    assert_probe_exercised(result, probe)
