"""Typing on a real headless KDE (KWin 5.27) whose keyboard layout is German.

The routes read the layout from the compositor itself (wl_keyboard's keymap),
so what they type and refuse follows the desktop's layout, not an assumed US
one: through the portal, "€" arrives (as the EuroSign keysym its AltGr+E key
has; the U+20AC keysym sent before was dropped), "é" is refused naming German;
the uinput route's keys for the same layout come from the same keymap. The
app is the Tk probe on KWin's XWayland (portal_suite's fixtures).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from evdev import ecodes

from holodesk.platform.base import Backend
from holodesk.platform.errors import InputError
from holodesk.platform.wayland.uinput_strokes import KeymapStrokes, Stroke, uinput_strokes
from tests.platform.wayland.conftest import start_desktop
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.platform.wayland.kde_portal import kde_route
from tests.platform.wayland.portal_suite import (  # noqa: F401 - fixtures collected here
    SettledTarget,
    probe,
    target,
)

pytestmark = pytest.mark.portal_desktop


@pytest.fixture(scope="module")
def desktop() -> Iterator[HeadlessDesktop]:
    running = start_desktop("kwin", screenshots_for_anyone=True, layouts="de")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def backend(
    desktop: HeadlessDesktop, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backend]:
    with kde_route(desktop, tmp_path_factory) as opened:
        yield opened


def test_the_german_layouts_characters_arrive(
    backend: Backend,
    target: SettledTarget,  # noqa: F811
) -> None:
    target.focus("line")
    text = "z€ß@y~Ä"  # AltGr's level (€ @ ~), Shift's (Ä), y and z on each other's keys
    backend.input.type_text(text)
    assert target.wait_text("line", text) == text


def test_what_the_german_layout_lacks_is_refused_naming_it(
    backend: Backend,
    target: SettledTarget,  # noqa: F811
) -> None:
    target.focus("line")
    with pytest.raises(InputError) as raised:
        backend.input.type_text("café")
    message = str(raised.value)
    assert message.startswith(
        "KDE Plasma 5 (xdg-desktop-portal-kde) types through the RemoteDesktop portal only "
        "what its keyboard layout (German) has a key for"
    ), message
    assert "that layout has no key for: 'é' (U+00E9). Nothing of this input was sent." in message
    backend.input.type_text("d")
    assert target.wait_text("line", "d") == "d"  # nothing of "caf" went out


def test_the_uinput_route_takes_its_keys_from_the_same_layout(desktop: HeadlessDesktop) -> None:
    strokes = uinput_strokes(desktop.environ())
    try:
        assert isinstance(strokes, KeymapStrokes)
        found = strokes.strokes("z€")
        assert found["z"] == Stroke(ecodes.KEY_Y)
        assert found["€"] == Stroke(ecodes.KEY_E, (ecodes.KEY_RIGHTALT,))
    finally:
        strokes.close()
