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

from holodesk.client import actions as a
from holodesk.client.executor import ActionExecutor
from holodesk.platform.base import Backend, Region
from holodesk.platform.wayland.layout import Monitor
from holodesk.platform.wayland.output_geometry import compositor_outputs, logical_by_outputs
from holodesk.platform.wayland.tokens import TokenStore
from tests.platform.wayland.conftest import start_desktop
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.platform.wayland.gnome_person import GnomePerson, open_allowed
from tests.platform.wayland.portal_suite import (  # noqa: F401 - collected here
    US_KEYMAP_REFUSALS,
    SettledTarget,
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


def test_the_agent_is_told_text_was_not_typed(
    backend: Backend,
    target: SettledTarget,  # noqa: F811
) -> None:
    """Proves: an agent whose text GNOME would drop gets a FAILED result saying which
    characters, on which desktop and layout, and what to do, and nothing of it is
    typed (before: OK, and the app got "caf" for "café"); the batch's next action is
    skipped, and text the layout has types as before."""
    target.focus("line")
    executor = ActionExecutor(backend)
    report = executor.execute(
        [a.TypeText(action_id="cafe", text="café"), a.TypeText(action_id="next", text="x")]
    )
    refused, skipped = report.results
    assert refused.status is a.ActionStatus.FAILED, refused
    assert refused.error.startswith(
        "GNOME (mutter) types through the RemoteDesktop portal only what its keyboard layout "
        "(English (US)) has a key for"
    ), refused.error
    assert "no key for: 'é' (U+00E9). Nothing of this input was sent." in refused.error
    assert "Settings > Keyboard > Input Sources" in refused.error
    assert skipped.status is a.ActionStatus.SKIPPED
    (typed,) = executor.execute([a.TypeText(action_id="plain", text="cafe")]).results
    assert typed.status is a.ActionStatus.OK
    assert target.wait_text("line", "cafe") == "cafe"  # nothing of "café" before it


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
