"""A StatusNotifierItem host for tests, on a private session bus: the real watcher
(`status-notifier-watcher`, Debian package haskell-status-notifier-item-utils), and
this module as the host a panel would be. It reads the items that register, their
properties and their com.canonical.dbusmenu layout, and clicks entries with the
dbusmenu Event call a panel makes when the user picks one.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from jeepney import DBusAddress, Properties, new_method_call  # type: ignore[import-untyped]
from jeepney.bus_messages import message_bus  # type: ignore[import-untyped]
from jeepney.io.blocking import DBusConnection, open_dbus_connection  # type: ignore[import-untyped]

from holodesk.platform.processes import stop_process
from tests.support.dbus_session import private_session_bus
from tests.support.system_tray import GUARD_S, program

WATCHER = DBusAddress(
    "/StatusNotifierWatcher",
    bus_name="org.kde.StatusNotifierWatcher",
    interface="org.kde.StatusNotifierWatcher",
)
ITEM_INTERFACE = "org.kde.StatusNotifierItem"
MENU_INTERFACE = "com.canonical.dbusmenu"


@dataclass(frozen=True)
class MenuItem:
    """One entry of an item's dbusmenu layout, as a panel would draw it."""

    id: int
    label: str
    enabled: bool
    toggle: str

    @property
    def text(self) -> str:
        # dbusmenu marks the mnemonic with "_" (Qt's "&"); what the user reads has none.
        return self.label.replace("_", "", 1) if "_" in self.label else self.label


class SniHost:
    """The host's side of one session bus: items, their properties, their menus."""

    def __init__(self, address: str, connection: DBusConnection) -> None:
        self.address = address
        self._connection = connection

    def _call(self, message: Any) -> tuple[Any, ...]:
        reply = self._connection.send_and_get_reply(message, timeout=GUARD_S)
        body: tuple[Any, ...] = reply.body
        return body

    def items(self) -> list[str]:
        """The bus names (and paths) of the registered items."""
        _, value = self._call(Properties(WATCHER).get("RegisteredStatusNotifierItems"))[0]
        return list(value)

    def wait_for_item(self) -> DBusAddress:
        deadline = time.monotonic() + GUARD_S
        while not (items := self.items()):
            assert time.monotonic() < deadline, "no StatusNotifierItem ever registered"
            time.sleep(0.1)
        assert len(items) == 1, items
        service, slash, path = items[0].partition("/")
        return DBusAddress(
            f"/{path}" if slash else "/StatusNotifierItem",
            bus_name=service,
            interface=ITEM_INTERFACE,
        )

    def properties(self, item: DBusAddress) -> dict[str, Any]:
        """The item's properties, their values without D-Bus signatures."""
        (found,) = self._call(Properties(item).get_all())
        return {name: value for name, (_, value) in found.items()}

    def menu(self, item: DBusAddress) -> list[MenuItem]:
        """The entries of the item's menu (its top level), separators left out."""
        path = self.properties(item)["Menu"]
        menu = DBusAddress(path, bus_name=item.bus_name, interface=MENU_INTERFACE)
        _, (_, _, children) = self._call(new_method_call(menu, "GetLayout", "iias", (0, -1, [])))
        entries = []
        for _, (entry_id, props, _) in children:
            values = {name: value for name, (_, value) in props.items()}
            if values.get("type") == "separator" or not values.get("visible", True):
                continue
            entries.append(
                MenuItem(
                    entry_id,
                    str(values.get("label", "")),
                    bool(values.get("enabled", True)),
                    str(values.get("toggle-type", "")),
                )
            )
        return entries

    def entry(self, item: DBusAddress, text: str) -> MenuItem:
        entries = self.menu(item)
        for entry in entries:
            if entry.text == text:
                return entry
        raise AssertionError(f"no menu entry {text!r}: {[e.text for e in entries]}")

    def click(self, item: DBusAddress, text: str) -> None:
        """Picks the entry the way a panel does: AboutToShow, then Event "clicked"."""
        entry = self.entry(item, text)
        assert entry.enabled, f"{text!r} is disabled"
        path = self.properties(item)["Menu"]
        menu = DBusAddress(path, bus_name=item.bus_name, interface=MENU_INTERFACE)
        self._call(new_method_call(menu, "AboutToShow", "i", (0,)))
        event = new_method_call(
            menu, "Event", "isvu", (entry.id, "clicked", ("i", 0), int(time.time()))
        )
        self._call(event)


@contextmanager
def sni_host() -> Iterator[SniHost]:
    """A session bus with the real watcher and a registered host: what a desktop with
    a StatusNotifierItem panel offers, and Qt looks for, when an app starts."""
    watcher_program = program("status-notifier-watcher", "haskell-status-notifier-item-utils")
    with private_session_bus() as address:
        watcher = subprocess.Popen(
            [watcher_program],
            env={**os.environ, "DBUS_SESSION_BUS_ADDRESS": address},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        connection = open_dbus_connection(bus=address)
        try:
            deadline = time.monotonic() + GUARD_S
            while not connection.send_and_get_reply(
                message_bus.NameHasOwner(WATCHER.bus_name), timeout=GUARD_S
            ).body[0]:
                assert watcher.poll() is None, "status-notifier-watcher exited"
                assert time.monotonic() < deadline, "status-notifier-watcher never started"
                time.sleep(0.1)
            name = f"org.kde.StatusNotifierHost-{os.getpid()}"
            connection.send_and_get_reply(message_bus.RequestName(name), timeout=GUARD_S)
            connection.send_and_get_reply(
                new_method_call(WATCHER, "RegisterStatusNotifierHost", "s", (name,)),
                timeout=GUARD_S,
            )
            yield SniHost(address, connection)
        finally:
            connection.close()
            stop_process(watcher)
