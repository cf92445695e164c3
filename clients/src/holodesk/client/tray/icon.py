"""The Qt layer: a QSystemTrayIcon that draws the controller's state and a QMenu of
menu.py's entries.

Qt's tray icon registers a StatusNotifierItem, its menu exported over
com.canonical.dbusmenu, when the session bus has a StatusNotifierWatcher (KDE,
GNOME's AppIndicator extension, XFCE's and waybar's trays); otherwise it docks into
the X11 system tray by XEmbed, paints its icon at the size the tray gives it and
takes clicks (pystray's X11 icon drew a stretched oval that took none). A QApplication
that cannot reach a display aborts its process, so run() first learns in a child
process whether one can start, and why not.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import cast

from PySide6.QtCore import QObject, QPoint, QRect, Qt, Signal, Slot
from PySide6.QtGui import QAction, QActionGroup, QColor, QCursor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QApplication, QMenu, QSystemTrayIcon

from holodesk.client.tray.controller import TrayController
from holodesk.client.tray.menu import MenuEntry, menu_entries
from holodesk.client.tray.state import TrayState

COLOURS = {
    TrayState.IDLE: (46, 160, 67),
    TrayState.RUNNING: (31, 111, 235),
    TrayState.PAUSED: (210, 153, 34),
    TrayState.ERROR: (218, 54, 51),
}
# Drawn at each size a tray asks for, so none is scaled from another.
ICON_SIZES = (16, 22, 24, 32, 48, 64)
_QT_PROBE = "from PySide6.QtWidgets import QApplication; QApplication(['holodesk-tray-probe'])"
_PROBE_TIMEOUT_S = 60.0


class TrayUnavailableError(Exception):
    """No system tray could be shown; the message says why."""


def qt_start_error() -> str | None:
    """Why Qt cannot start a GUI here (no display, a missing system library), or
    None when it can. Asked of a child process: Qt aborts the process it fails in."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _QT_PROBE],
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"Qt did not start within {_PROBE_TIMEOUT_S:.0f} s"
    if done.returncode == 0:
        return None
    # Qt's first line names the cause ("qt.qpa.xcb: could not connect to display");
    # the ones after it are generic advice about plugins.
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return lines[0] if lines else f"Qt exited with status {done.returncode}"


def icon_pixmap(state: TrayState, size: int) -> QPixmap:
    """A filled circle in the state's colour (two bars when paused) on a transparent
    square: round at every size, whatever the tray's own shape."""
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QColor(255, 255, 255))
        painter.setBrush(QColor(*COLOURS[state]))
        painter.drawEllipse(1, 1, size - 3, size - 3)
        if state is TrayState.PAUSED:
            bar = max(size // 8, 1)
            top, height = size // 4, size // 2
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(255, 255, 255))
            painter.drawRect(size // 3, top, bar, height)
            painter.drawRect(size * 2 // 3 - bar, top, bar, height)
    finally:
        painter.end()
    return pixmap


def state_icon(state: TrayState) -> QIcon:
    icon = QIcon()
    for size in ICON_SIZES:
        icon.addPixmap(icon_pixmap(state, size))
    return icon


def menu_text(entry: MenuEntry) -> str:
    """The entry's label for Qt: '&' doubled, its mnemonic letter marked."""
    text = entry.text.replace("&", "&&")
    at = text.find(entry.mnemonic) if entry.mnemonic else -1
    return text if at < 0 else f"{text[:at]}&{text[at:]}"


class _Bridge(QObject):
    """Carries the controller's changes (from its session thread) and stop requests
    onto Qt's thread: a signal emitted elsewhere is queued to this object's thread."""

    changed = Signal()
    quit_requested = Signal()

    def __init__(self, tray: TrayIcon) -> None:
        super().__init__()
        self._tray = tray
        self.changed.connect(self._on_changed)
        self.quit_requested.connect(self._on_quit)

    @Slot()
    def _on_changed(self) -> None:
        self._tray.refresh()

    @Slot()
    def _on_quit(self) -> None:
        self._tray.hide_and_quit()


class TrayIcon:
    """The icon and its menu. run() blocks in Qt's loop until Quit; start() shows
    them without entering it (for a caller that runs the loop itself)."""

    def __init__(self, controller: TrayController) -> None:
        self._controller = controller
        self._entries = menu_entries(controller, self.stop)
        # Set once the icon exists and is shown.
        self.shown = threading.Event()
        self._app: QApplication | None = None
        self._tray: QSystemTrayIcon | None = None
        self._menu: QMenu | None = None
        self._bridge: _Bridge | None = None
        self._actions: list[tuple[MenuEntry, QAction]] = []

    # -- for the code that drives it --------------------------------------------------

    @property
    def tray(self) -> QSystemTrayIcon:
        if self._tray is None:
            raise RuntimeError("the tray icon is not started")
        return self._tray

    @property
    def menu(self) -> QMenu:
        if self._menu is None:
            raise RuntimeError("the tray icon is not started")
        return self._menu

    def action(self, label: str) -> QAction:
        """The menu's action for the entry labelled `label` (as menu.py names it)."""
        for entry, action in self._actions:
            if entry.text == label:
                return action
        raise KeyError(f"no menu entry {label!r}: {[e.text for e, _ in self._actions]}")

    def actions(self) -> Iterator[tuple[str, QAction]]:
        for entry, action in self._actions:
            yield entry.text, action

    def action_rect(self, label: str) -> QRect:
        """Where the entry is on the screen while the menu is open."""
        menu = self.menu
        rect = menu.actionGeometry(self.action(label))
        return QRect(menu.mapToGlobal(rect.topLeft()), rect.size())

    # -- life -------------------------------------------------------------------------

    def run(self) -> None:
        """Shows the icon and blocks until Quit."""
        error = qt_start_error()
        if error is not None:
            raise TrayUnavailableError(
                f"no system tray: {error} (run inside a desktop session: on X11 DISPLAY "
                "must be set, on Wayland WAYLAND_DISPLAY)"
            )
        app = self.start()
        if not QSystemTrayIcon.isSystemTrayAvailable():
            print(
                "holodesk tray: no system tray yet; the icon appears when one starts",
                file=sys.stderr,
            )
        app.exec()

    def start(self) -> QApplication:
        """Creates the icon and its menu on this thread and shows them."""
        existing = QApplication.instance()
        app = cast(QApplication, existing) if existing is not None else QApplication(["holodesk"])
        app.setQuitOnLastWindowClosed(False)  # menus closing must not end the tray
        self._app = app
        self._bridge = _Bridge(self)
        menu = QMenu()
        servers = QActionGroup(menu)
        for index, entry in enumerate(self._entries):
            if index in self._separated_before():
                menu.addSeparator()
            action = menu.addAction(menu_text(entry))
            if entry.checked is not None:
                action.setCheckable(True)
                servers.addAction(action)
            if entry.action is not None:
                action.triggered.connect(lambda _checked=False, e=entry: self._do(e))
            self._actions.append((entry, action))
        menu.aboutToShow.connect(self.refresh)
        self._menu = menu
        tray = QSystemTrayIcon(state_icon(self._controller.status.state))
        tray.setContextMenu(menu)
        tray.activated.connect(self._activated)
        self._tray = tray
        self.refresh()
        tray.show()
        self.shown.set()
        return app

    def _separated_before(self) -> set[int]:
        # Status and daemon | session controls | views | servers | Quit.
        starts = {2, 6}
        servers = [i for i, e in enumerate(self._entries) if e.checked is not None]
        if servers:
            starts.add(servers[0])
        starts.add(len(self._entries) - 1)
        return starts

    def show(self, status: object = None) -> None:
        """Redraws for a new state; any thread (the controller's on_change)."""
        if self._bridge is not None:
            self._bridge.changed.emit()

    def refresh(self) -> None:
        """Redraws the icon, tooltip and menu from the controller's state (Qt's thread)."""
        status = self._controller.status
        for entry, action in self._actions:
            action.setText(menu_text(entry))
            action.setEnabled(entry.enabled())
            if entry.checked is not None:
                action.setChecked(entry.checked())
        if self._tray is not None:
            self._tray.setIcon(state_icon(status.state))
            self._tray.setToolTip(status.title)

    def stop(self) -> None:
        """Ends any session, then hides the icon and leaves Qt's loop; any thread."""
        self._controller.close()
        if self._bridge is not None:
            self._bridge.quit_requested.emit()

    def hide_and_quit(self) -> None:
        if self._tray is not None:
            self._tray.hide()
        if self._menu is not None:
            self._menu.hide()
        if self._app is not None:
            self._app.quit()

    # -- what a click does ------------------------------------------------------------

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        # A right click opens the context menu on its own (Qt, or the SNI host); a
        # left click opens the same menu, where the pointer is.
        if reason is QSystemTrayIcon.ActivationReason.Trigger and self._menu is not None:
            self._menu.popup(QCursor.pos() + QPoint(1, 1))

    def _do(self, entry: MenuEntry) -> None:
        action = entry.action
        if action is None:
            return
        if entry.blocking:
            # Start task… asks in a dialog first: the tray keeps drawing meanwhile.
            threading.Thread(target=action, name="holodesk-tray-ask", daemon=True).start()
        else:
            action()
        self.refresh()
