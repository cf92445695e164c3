"""A real X11 system tray (trayer) for tests, and what a test reads off it: the icons
docked in its panel, where they are, and what they painted.

trayer owns the _NET_SYSTEM_TRAY_S0 selection a moment before it embeds the icons
that ask, and an icon that asks in that moment is never docked, so a tray counts as
ready only once it has docked a throwaway XEmbed icon.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from PIL import Image, ImageChops
from Xlib import X
from Xlib.display import Display
from Xlib.error import BadWindow
from Xlib.protocol.event import ClientMessage
from Xlib.xobject.drawable import Window

from holodesk.client.tray.ask import TITLE

GUARD_S = 30.0
TRAY_SELECTION = "_NET_SYSTEM_TRAY_S0"


def program(name: str, package: str) -> str:
    """The path of a system program; skips (fails on CI) when it is not installed."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (apt-get install {package}; tools/setup.sh does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@contextmanager
def trayer(display_name: str) -> Iterator[None]:
    """trayer at the top right of the screen, ready to dock icons; gone afterwards."""
    # The X server outlives the tests: a tray an earlier test stopped may still own
    # the selection a moment after its process exited.
    wait_for_tray_owner(display_name, owned=False)
    process = subprocess.Popen(
        [
            program("trayer", "trayer"),
            *("--edge", "top", "--align", "right"),
            *("--widthtype", "pixel", "--width", "200", "--height", "32"),
        ],
        env={**os.environ, "DISPLAY": display_name},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_tray_owner(display_name)
        wait_until_it_docks_an_icon(display_name)
        yield
    finally:
        process.terminate()
        process.wait(10)
        wait_for_tray_owner(display_name, owned=False)


def wait_for_tray_owner(display_name: str, *, owned: bool = True) -> None:
    """Icons dock only once a tray owns the selection (`owned`); a stopped tray is
    gone only once the server has released it (not `owned`)."""
    display = Display(display_name)
    try:
        selection = display.intern_atom(TRAY_SELECTION)
        deadline = time.monotonic() + GUARD_S
        while (display.get_selection_owner(selection) != X.NONE) != owned:
            state = "became" if owned else "stopped being"
            assert time.monotonic() < deadline, f"trayer never {state} the system tray"
            time.sleep(0.1)
    finally:
        display.close()


def wait_until_it_docks_an_icon(display_name: str) -> None:
    """A throwaway XEmbed window asks to dock, again every half second, until the tray
    reparents it; then it goes, and the icon under test asks a tray that answers."""
    display = Display(display_name)
    try:
        screen = display.screen()
        owner = display.get_selection_owner(display.intern_atom(TRAY_SELECTION))
        opcode = display.intern_atom("_NET_SYSTEM_TRAY_OPCODE")
        icon = screen.root.create_window(0, 0, 16, 16, 0, screen.root_depth)
        xembed = display.intern_atom("_XEMBED_INFO")
        icon.change_property(xembed, xembed, 32, [0, 1])  # version 0, mapped
        deadline = time.monotonic() + GUARD_S
        try:
            while icon.query_tree().parent.id == screen.root.id:
                assert time.monotonic() < deadline, "trayer never docked an icon"
                request = ClientMessage(
                    window=owner, client_type=opcode, data=(32, [X.CurrentTime, 0, icon.id, 0, 0])
                )
                owner.send_event(request, event_mask=X.NoEventMask)
                display.flush()
                time.sleep(0.5)
        finally:
            icon.destroy()
            display.sync()
    finally:
        display.close()


@dataclass(frozen=True)
class Docked:
    """An icon window inside the tray's panel, in root coordinates."""

    window: int
    x: int
    y: int
    width: int
    height: int

    @property
    def center(self) -> tuple[int, int]:
        return self.x + self.width // 2, self.y + self.height // 2


def _wm_class(window: Window) -> tuple[str, ...]:
    try:
        found = window.get_wm_class()
    except BadWindow:
        return ()
    return tuple(found) if found else ()


def _descendants(window: Window) -> Iterator[Window]:
    try:
        children = window.query_tree().children
    except BadWindow:
        return
    for child in children:
        yield child
        yield from _descendants(child)


def docked_icons(display: Display, app_class: str) -> list[Docked]:
    """The mapped windows of `app_class` (WM_CLASS) inside trayer's panel."""
    root = display.screen().root
    found = []
    for panel in _descendants(root):
        if _wm_class(panel) != ("panel", "trayer"):
            continue
        for window in _descendants(panel):
            if app_class not in _wm_class(window):
                continue
            try:
                if window.get_attributes().map_state != X.IsViewable:
                    continue
                geometry = window.get_geometry()
                at = root.translate_coords(window, 0, 0)
            except BadWindow:
                continue
            found.append(Docked(window.id, at.x, at.y, geometry.width, geometry.height))
    return found


def wait_docked(display: Display, app_class: str) -> Docked:
    """The icon, once the tray has docked and mapped it (fails with what was seen)."""
    deadline = time.monotonic() + GUARD_S
    while True:
        icons = docked_icons(display, app_class)
        if len(icons) == 1 and icons[0].width > 1:
            return icons[0]
        assert time.monotonic() < deadline, f"the icon never docked into the tray: {icons}"
        time.sleep(0.1)


def wait_undocked(display: Display, app_class: str) -> None:
    deadline = time.monotonic() + GUARD_S
    while docked_icons(display, app_class):
        assert time.monotonic() < deadline, "the icon stayed in the tray"
        time.sleep(0.1)


def painted_box(display: Display, icon: Docked) -> tuple[int, int, int, int] | None:
    """The box (left, top, right, bottom) of the pixels the icon painted: those that
    differ from its corner, which a round icon leaves to the tray's background; None
    while it has painted nothing."""
    window = display.create_resource_object("window", icon.window)
    image = window.get_image(0, 0, icon.width, icon.height, X.ZPixmap, 0xFFFFFFFF)
    pixels = Image.frombytes("RGBX", (icon.width, icon.height), image.data, "raw", "BGRX")
    pixels = pixels.convert("RGB")
    background = pixels.getpixel((0, 0))
    box = ImageChops.difference(pixels, Image.new("RGB", pixels.size, background)).getbbox()
    return None if box is None else (box[0], box[1], box[2], box[3])


def assert_round(box: tuple[int, int, int, int] | None, icon: Docked) -> None:
    """A round icon drawn at the tray's size: as wide as it is tall (a stretched oval
    fills the whole window), and as large as the window's shorter side allows."""
    assert box is not None, "the icon painted nothing"
    left, top, right, bottom = box
    assert abs((right - left) - (bottom - top)) <= 2, f"stretched: {box} in {icon}"
    side = min(icon.width, icon.height)
    assert side - 4 <= right - left <= side, f"not drawn at the tray's size: {box} in {icon}"


def xdotool(*args: str) -> str:
    """Runs xdotool (real XTEST input); its output. A failure is not raised: with no
    window manager `windowactivate` fails, and Tk's dialog takes the focus itself."""
    done = subprocess.run(
        [program("xdotool", "xdotool"), *args],
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        check=False,
    )
    return done.stdout


async def dialog_window() -> str:
    """The tray's task dialog window (ask.py), once it is on the screen."""
    deadline = time.monotonic() + 2 * GUARD_S  # a loaded machine starts Tk slowly
    while True:
        found = await asyncio.to_thread(xdotool, "search", "--onlyvisible", "--name", TITLE)
        if found.split():
            return found.split()[0]
        assert time.monotonic() < deadline, "the task dialog never appeared"
        await asyncio.sleep(0.2)
