"""The portal route on a real headless GNOME: mutter 43, xdg-desktop-portal-gnome, PipeWire.

One RemoteDesktop session for the module, its consent dialog answered by the
GnomePerson (through mutter's own remote desktop API), frames from its PipeWire
stream, and the platform conformance suite against the Tk probe on mutter's
XWayland (tests/platform/wayland/portal_suite.py); the same suite on a native
Wayland app is test_portal_mutter_native.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from holodesk.platform.base import Backend, Region
from holodesk.platform.wayland.layout import Monitor
from holodesk.platform.wayland.output_geometry import compositor_outputs, logical_by_outputs
from holodesk.platform.wayland.tokens import TokenStore
from tests.platform.wayland.conftest import start_desktop
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.platform.wayland.gnome_person import GnomePerson, open_allowed
from tests.platform.wayland.portal_suite import (  # noqa: F401 - collected here
    US_KEYMAP_REFUSALS,
    conformance,
    probe,
    target,
    test_displays_come_from_the_stream,
    test_drag_path,
    test_frames_follow_what_input_changes,
    test_frames_show_the_probe_window,
)

pytestmark = pytest.mark.portal_desktop


@pytest.fixture(scope="module")
def desktop() -> Iterator[HeadlessDesktop]:
    running = start_desktop("mutter")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def person(desktop: HeadlessDesktop) -> Iterator[GnomePerson]:
    someone = GnomePerson(desktop)
    yield someone
    someone.close()


@pytest.fixture(scope="module")
def backend(
    desktop: HeadlessDesktop, person: GnomePerson, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backend]:
    state = tmp_path_factory.mktemp("gnome-state")
    opened = open_allowed(desktop, person, TokenStore(state / "tokens.json"), state / "dialog.png")
    yield opened
    opened.close()


# What mutter 43 itself cannot do through a RemoteDesktop session. It also types only
# keysyms its keymap has a key for (its log: 'No keycode found for keyval e9 in current
# group'): the route refuses those, before sending anything (US_KEYMAP_REFUSALS).
test_conformance = conformance(
    {
        "key-down-and-up": (
            "a second press of a key already held does not arrive (the suite's stand-in for "
            "auto-repeat): only one B; mutter repeats a held key itself, which the test desktop "
            "turns off so held keys stay deterministic"
        ),
    },
    refused=US_KEYMAP_REFUSALS,
)


def test_mutters_outputs_leave_its_logical_streams_as_they_are(desktop: HeadlessDesktop) -> None:
    """The geometry the portal route asks any compositor for (xdg-output, no wlroots
    protocol needed): mutter's streams are already logical, so nothing changes."""
    socket = str(desktop.runtime_dir / desktop.wayland_display)
    (output,) = compositor_outputs({"WAYLAND_DISPLAY": socket})
    assert (output.logical, output.physical_width, output.physical_height) == (
        Region(0, 0, desktop.width, desktop.height),
        desktop.width,
        desktop.height,
    )
    stream = Monitor(40, 0, 0, desktop.width, desktop.height)
    assert logical_by_outputs([stream], [output]) == (stream,)
