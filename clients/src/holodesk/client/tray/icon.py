"""The pystray layer: draws the controller's state and maps menu entries to it.

pystray picks its own backend (AppIndicator/GTK or plain X11 on Linux, the
menu bar on macOS, the notification area on Windows) and connects to the desktop
when imported, so it is imported only when the tray starts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from PIL import Image, ImageDraw

from holodesk.client.tray.controller import TrayController
from holodesk.client.tray.state import TrayState, TrayStatus

COLOURS = {
    TrayState.IDLE: (46, 160, 67),
    TrayState.RUNNING: (31, 111, 235),
    TrayState.PAUSED: (210, 153, 34),
    TrayState.ERROR: (218, 54, 51),
}


class TrayUnavailableError(Exception):
    """No system tray could be shown; the message says why."""


def icon_image(state: TrayState, size: int = 64) -> Image.Image:
    image = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    draw.ellipse((2, 2, size - 3, size - 3), fill=COLOURS[state], outline=(255, 255, 255))
    if state is TrayState.PAUSED:
        bar = size // 8
        draw.rectangle((size // 3, size // 4, size // 3 + bar, size * 3 // 4), fill="white")
        draw.rectangle((size * 2 // 3 - bar, size // 4, size * 2 // 3, size * 3 // 4), fill="white")
    return image


@dataclass(frozen=True)
class MenuEntry:
    label: str | Callable[[], str]
    action: Callable[[], object] | None
    enabled: Callable[[], bool]
    default: bool = False
    # Set for radio entries (the server list): whether this one is chosen.
    checked: Callable[[], bool] | None = None

    @property
    def text(self) -> str:
        return self.label() if callable(self.label) else self.label


def menu_entries(controller: TrayController, quit_: Callable[[], None]) -> list[MenuEntry]:
    """The menu as plain data, shared by the pystray menu and the tests, so what the
    tests click is what the user clicks."""

    def state_is(state: TrayState) -> Callable[[], bool]:
        return lambda: controller.status.state is state

    def idle() -> bool:
        return not controller.busy

    entries = [
        MenuEntry(lambda: controller.status.title, None, lambda: False),
        MenuEntry("Start task…", controller.start_task, idle, default=True),
        MenuEntry("Pause", controller.pause, state_is(TrayState.RUNNING)),
        MenuEntry("Resume", controller.resume, state_is(TrayState.PAUSED)),
        MenuEntry("Emergency stop", controller.emergency_stop, lambda: controller.busy),
        MenuEntry(
            "Open last report", controller.open_last_report, lambda: controller.status.has_report
        ),
    ]
    for name in controller.servers:
        entries.append(
            MenuEntry(
                f"Server: {name}",
                partial(controller.select_server, name),
                idle,
                checked=partial(lambda chosen: controller.status.server == chosen, name),
            )
        )
    entries.append(MenuEntry("Quit", quit_, lambda: True))
    return entries


class TrayIcon:
    def __init__(self, controller: TrayController) -> None:
        self._controller = controller
        self._icon: Any = None
        # Set once the pystray icon exists (run() then blocks in its loop).
        self.shown = threading.Event()

    def run(self) -> None:
        """Shows the icon and blocks until Quit."""
        try:
            import pystray
        except Exception as error:  # pystray connects to the desktop on import
            raise TrayUnavailableError(
                f"no system tray: {error} (run inside a desktop session; on Linux "
                "DISPLAY must be set and a tray or AppIndicator host running)"
            ) from error

        def wrap(entry: MenuEntry) -> Any:
            checked, action = entry.checked, entry.action
            return pystray.MenuItem(
                lambda _item: entry.text,
                (lambda: action()) if action is not None else None,
                enabled=lambda _item: entry.enabled(),
                default=entry.default,
                checked=(lambda _item: checked()) if checked else None,
                radio=checked is not None,
            )

        entries = menu_entries(self._controller, self.stop)
        status = self._controller.status
        self._icon = pystray.Icon(
            "holodesk",
            icon_image(status.state),
            status.title,
            menu=pystray.Menu(*(wrap(e) for e in entries)),
        )
        self._icon.run(setup=self._setup)

    def _setup(self, icon: Any) -> None:
        icon.visible = True
        self.shown.set()

    def show(self, status: TrayStatus) -> None:
        """Redraws for a new state; any thread."""
        icon = self._icon
        if icon is None:
            return
        icon.icon = icon_image(status.state)
        icon.title = status.title
        icon.update_menu()

    def stop(self) -> None:
        self._controller.close()
        if self._icon is not None:
            self._icon.stop()
