"""The portal route on a real headless KDE: KWin 5.27 (--virtual), xdg-desktop-portal-kde, PipeWire.

One RemoteDesktop session for the module, frames from its PipeWire stream, and
the platform conformance suite against the Tk probe on KWin's XWayland
(tests/platform/wayland/portal_suite.py).

Consent: with Debian 12's packages as tools/setup.sh installs them (no
recommends), xdg-desktop-portal-kde 5.27 starts the session without showing a
dialog (its QML dialogs cannot load: QtQuick.Controls and Kirigami are not
installed), so nobody has to answer here; the dialog path is tested on GNOME.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from holodesk.platform.base import Backend
from holodesk.platform.wayland.portal_route import open_portal_route
from holodesk.platform.wayland.tokens import TokenStore
from tests.platform.wayland.conftest import start_desktop
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.platform.wayland.portal_suite import (  # noqa: F401 - collected here
    conformance,
    probe,
    test_displays_come_from_the_stream,
    test_drag_path,
    test_frames_follow_what_input_changes,
    test_frames_show_the_probe_window,
)

pytestmark = pytest.mark.portal_desktop


@pytest.fixture(scope="module")
def desktop() -> Iterator[HeadlessDesktop]:
    running = start_desktop("kwin")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def backend(
    desktop: HeadlessDesktop, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backend]:
    state = tmp_path_factory.mktemp("kde-state")
    opened = open_portal_route(
        desktop.bus_address, TokenStore(state / "tokens.json"), consent_timeout_s=30
    )
    yield opened
    opened.close()


test_conformance = conformance({})
