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


# What mutter 43 itself does not do through a RemoteDesktop session: the same six
# cases as on the Tk probe through XWayland (test_portal_mutter.py), so none of them
# is XWayland's doing. Strict: a mutter that learns one fails its case.
_NO_KEYCODE = (
    "mutter 43 types only keysyms its keymap has a key for (its log: 'No keycode found for "
    "keyval e9 in current group'), and a portal client cannot change that keymap"
)
MUTTER_LIMITS = {
    "held-character-without-a-key": _NO_KEYCODE + ": ß, é, € have no key on the US layout",
    "unicode-text": _NO_KEYCODE + ": é, ö, ñ, €, 日本 are dropped",
    "format-characters": _NO_KEYCODE + ": ZWJ, ZWNJ, LRM, RLM and tag characters are dropped",
    "keypad-keys": (
        "mutter 43 reaches a keysym's second level with Shift, but the keypad's digits and "
        "decimal point are NumLock's level: KP_Decimal arrives as Shift+KP_Delete"
    ),
    "key-down-and-up": (
        "a second press of a key already held does not arrive (the suite's stand-in for "
        "auto-repeat): only one B"
    ),
    "browser-keys": (
        "XF86Refresh and XF86Stop do not arrive at the native GTK app either (the other "
        "browser keys do): mutter's, not XWayland's"
    ),
}


# Every case, drag-path too: every motion of a fast drag arrives (GTK compresses
# none, and mutter forwards each portal motion).
test_conformance = native_conformance(MUTTER_LIMITS)
