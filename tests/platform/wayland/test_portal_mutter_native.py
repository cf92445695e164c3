"""The conformance suite on a native Wayland app on a real headless GNOME (mutter 43), through
the portal route: no XWayland between the compositor and the app.

tests/apps/gtk_conformance_app.py (GTK 3, GDK_BACKEND=wayland) runs fullscreen on
mutter (tests/platform/wayland/native_app.py), a fresh window per case; input goes
through one RemoteDesktop session for the module (its dialog answered by the
GnomePerson), as every app's input comes from mutter's seat. The Tk probe on
mutter's XWayland runs the same suite in test_portal_mutter.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from holodesk.platform.base import Backend
from holodesk.platform.wayland.tokens import TokenStore
from tests.platform.wayland.conftest import start_desktop
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.platform.wayland.gnome_person import GnomePerson, open_allowed
from tests.platform.wayland.native_app import (  # noqa: F401 - fixtures collected here
    native_app,
    native_conformance,
    target,
)
from tests.platform.wayland.portal_suite import US_KEYMAP_REFUSALS

pytestmark = pytest.mark.portal_desktop


@pytest.fixture(scope="module")
def desktop() -> Iterator[HeadlessDesktop]:
    running = start_desktop("mutter")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def backend(
    desktop: HeadlessDesktop, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backend]:
    state = tmp_path_factory.mktemp("gnome-state")
    person = GnomePerson(desktop)
    try:
        opened = open_allowed(
            desktop, person, TokenStore(state / "tokens.json"), state / "dialog.png"
        )
    finally:
        person.close()
    yield opened
    opened.close()


# What mutter 43 itself does not do through a RemoteDesktop session: the same cases as
# on the Tk probe through XWayland (test_portal_mutter.py), so none of them is XWayland's
# doing, and the same keys refused (US_KEYMAP_REFUSALS): mutter drops a keysym its keymap
# has no key for. Strict: a mutter that learns one fails its case.
MUTTER_LIMITS = {
    "key-down-and-up": (
        "a second press of a key already held does not arrive (the suite's stand-in for "
        "auto-repeat): only one B"
    ),
}


# Every case, drag-path too: every motion of a fast drag arrives (GTK compresses
# none, and mutter forwards each portal motion).
test_conformance = native_conformance(MUTTER_LIMITS, refused=US_KEYMAP_REFUSALS)
