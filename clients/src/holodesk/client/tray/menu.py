"""The tray's menu as plain data: what each entry says, does, and when it is enabled.

The Qt layer (icon.py) draws exactly these entries and the controller tests click
them without a display, so what the tests click is what the user clicks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from holodesk.client.tray.controller import TrayController
from holodesk.client.tray.state import TrayState

START = "Start task…"
PAUSE = "Pause"
RESUME = "Resume"
STOP = "Stop"
LIVE_VIEW = "Open live view"
LAST_REPORT = "Open last report"
QUIT = "Quit"


@dataclass(frozen=True)
class MenuEntry:
    label: str | Callable[[], str]
    action: Callable[[], object] | None
    enabled: Callable[[], bool]
    # The key that picks this entry while the menu is open (its underlined letter).
    mnemonic: str = ""
    # Set for radio entries (the server list): whether this one is chosen.
    checked: Callable[[], bool] | None = None
    # Entries that start a task ask the user first (a dialog): the Qt layer runs
    # them off its own thread, so the tray keeps drawing meanwhile.
    blocking: bool = False

    @property
    def text(self) -> str:
        return self.label() if callable(self.label) else self.label


def menu_entries(controller: TrayController, quit_: Callable[[], None]) -> list[MenuEntry]:
    """Status line, the daemon talked to, the session's controls, the live view, the
    last report, the server choice and Quit, in the order the menu shows them."""

    def state_is(state: TrayState) -> Callable[[], bool]:
        return lambda: controller.status.state is state

    def idle() -> bool:
        return not controller.busy

    def never() -> bool:
        return False

    entries = [
        MenuEntry(lambda: controller.status.title, None, never),
        MenuEntry(lambda: f"Daemon: {controller.address}", None, never),
        MenuEntry(START, controller.start_task, idle, mnemonic="S", blocking=True),
        MenuEntry(PAUSE, controller.pause, state_is(TrayState.RUNNING), mnemonic="P"),
        MenuEntry(RESUME, controller.resume, state_is(TrayState.PAUSED), mnemonic="R"),
        MenuEntry(STOP, controller.emergency_stop, lambda: controller.busy, mnemonic="t"),
        MenuEntry(LIVE_VIEW, controller.open_live_view, lambda: True, mnemonic="l"),
        MenuEntry(
            LAST_REPORT,
            controller.open_last_report,
            lambda: controller.status.has_report,
            mnemonic="o",
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
    entries.append(MenuEntry(QUIT, quit_, lambda: True, mnemonic="Q"))
    return entries
