"""The person at a headless GNOME desk: sees the screen and answers the portal's dialog.

xdg-desktop-portal-gnome asks for consent with a GTK dialog ("Remote desktop":
a monitor list, an "Allow remote interaction" switch, Cancel and Share). In a
test nobody sits there, so this plays the person, through mutter's own remote
desktop API (org.gnome.Mutter.RemoteDesktop and .ScreenCast, what
gnome-remote-desktop uses; the compositor's private API, which asks nobody):
it watches the screen through a PipeWire stream of its own (read with the
platform's PipeWireStream over a plain connection to the desktop's PipeWire
socket), finds the dialog's blue Share button, turns the switch on, checks it
turned blue, and presses Share.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jeepney import DBusAddress, MatchRule, MessageType, new_method_call  # type: ignore[import-untyped]
from jeepney.bus_messages import message_bus  # type: ignore[import-untyped]
from jeepney.io.blocking import open_dbus_connection  # type: ignore[import-untyped]
from PIL import Image

from holodesk.platform.base import Backend
from holodesk.platform.wayland.pipewire import PipeWireStream
from holodesk.platform.wayland.portal_route import open_portal_route
from holodesk.platform.wayland.tokens import TokenStore
from tests.platform.wayland.desktops import HeadlessDesktop

RD = "org.gnome.Mutter.RemoteDesktop"
SC = "org.gnome.Mutter.ScreenCast"
BTN_LEFT = 0x110
# GNOME's accent blue (Adwaita's suggested-action button and a switch turned on).
ACCENT = (53, 132, 228)
# The switch sits this far from the Share button's centre (xdg-desktop-portal-gnome 43's
# dialog, Adwaita, at scale 1); checked after the click by its colour.
SWITCH_FROM_SHARE = (-23, 199)
CANCEL_FROM_SHARE = (-423, 0)
# Share before a monitor is picked (insensitive), and the Screen Share dialog's monitor row.
PALE_ACCENT = (144, 183, 231)
MONITOR_FROM_SHARE = (-213, 153)


class GnomePerson:
    """Eyes (a mutter screen cast) and hands (a mutter remote desktop session)."""

    def __init__(self, desktop: HeadlessDesktop) -> None:
        self._connection = open_dbus_connection(bus=desktop.bus_address)
        (self._session,) = self._call(RD, "/org/gnome/Mutter/RemoteDesktop", RD, "CreateSession")
        (session_id,) = self._call(
            RD,
            self._session,
            "org.freedesktop.DBus.Properties",
            "Get",
            "ss",
            (f"{RD}.Session", "SessionId"),
        )
        (cast,) = self._call(
            SC,
            "/org/gnome/Mutter/ScreenCast",
            SC,
            "CreateSession",
            "a{sv}",
            ({"remote-desktop-session-id": ("s", session_id[1])},),
        )
        connector = self._connector()
        (self._stream,) = self._call(
            SC, cast, f"{SC}.Session", "RecordMonitor", "sa{sv}", (connector, {})
        )
        rule = MatchRule(type="signal", interface=f"{SC}.Stream", member="PipeWireStreamAdded")
        self._connection.send_and_get_reply(message_bus.AddMatch(rule), timeout=10)
        added: deque[Any] = deque()
        with self._connection.filter(rule, queue=added):
            self._call(RD, self._session, f"{RD}.Session", "Start")
            node = self._connection.recv_until_filtered(added, timeout=20).body[0]
        remote = socket.socket(socket.AF_UNIX)
        remote.connect(str(desktop.runtime_dir / "pipewire-0"))
        self._eyes = PipeWireStream(remote.detach(), int(node))

    def _connector(self) -> str:
        state = self._call(
            "org.gnome.Mutter.DisplayConfig",
            "/org/gnome/Mutter/DisplayConfig",
            "org.gnome.Mutter.DisplayConfig",
            "GetCurrentState",
        )
        return str(state[1][0][0][0])  # the first monitor's connector (Meta-0)

    def _call(
        self,
        destination: str,
        path: str,
        interface: str,
        method: str,
        signature: str | None = None,
        body: tuple[Any, ...] = (),
    ) -> tuple[Any, ...]:
        message = new_method_call(
            DBusAddress(path, bus_name=destination, interface=interface), method, signature, body
        )
        reply = self._connection.send_and_get_reply(message, timeout=20)
        if reply.header.message_type == MessageType.error:
            raise RuntimeError(f"{interface}.{method} failed: {reply.body}")
        return tuple(reply.body)

    # -- what a person does -------------------------------------------------------
    def screen(self) -> Image.Image:
        return self._eyes.latest()

    def click(self, x: float, y: float) -> None:
        session = f"{RD}.Session"
        self._call(RD, self._session, session, "NotifyPointerMotionAbsolute", "sdd",
                   (self._stream, float(x), float(y)))  # fmt: skip
        # As a hand does: the pointer arrives, then presses (GTK takes a press that
        # comes in the same frame as the pointer's entry as no click at all).
        time.sleep(0.15)
        self._call(RD, self._session, session, "NotifyPointerButton", "ib", (BTN_LEFT, True))
        time.sleep(0.05)
        self._call(RD, self._session, session, "NotifyPointerButton", "ib", (BTN_LEFT, False))

    def find_share_button(self) -> tuple[int, int] | None:
        """The centre of the dialog's Share button, or None while no dialog shows."""
        return _accent_centre(self.screen(), within=None)

    def wait_for_dialog(
        self, timeout_s: float = 30.0, evidence: Path | None = None
    ) -> tuple[int, int]:
        """The Share button of the dialog once one shows (and has stopped moving)."""
        deadline = time.monotonic() + timeout_s
        previous = None
        while True:
            share = self.find_share_button()
            if share is not None and share == previous:
                return share  # the same place in two frames: the map animation is over
            if time.monotonic() > deadline:
                self._keep(evidence)
                raise AssertionError(f"no portal dialog appeared within {timeout_s:g} s")
            previous = share
            time.sleep(0.15)

    def wait_until_no_dialog(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.find_share_button() is not None:
            if time.monotonic() > deadline:
                raise AssertionError(f"the portal dialog stayed up for {timeout_s:g} s")
            time.sleep(0.1)

    def share_screen(self, timeout_s: float = 30.0, evidence: Path | None = None) -> None:
        """Pick the monitor in the Screen Share dialog (a ScreenCast session's; its
        'Remember this selection' is ticked already), then press Share, which turns
        from pale to accent blue once a monitor is picked."""
        deadline = time.monotonic() + timeout_s
        previous = None
        while True:
            share = _accent_centre(self.screen(), within=None, colour=PALE_ACCENT)
            if share is not None and share == previous:
                break
            if time.monotonic() > deadline:
                self._keep(evidence)
                raise AssertionError(f"no Screen Share dialog appeared within {timeout_s:g} s")
            previous = share
            time.sleep(0.15)
        # Picked again while Share stays pale (a click can land before GTK has the
        # pointer's entry into its window).
        while not _is_accent(self.screen().getpixel(share)):
            if time.monotonic() > deadline:
                self._keep(evidence)
                raise AssertionError("Share stayed insensitive: no monitor got picked")
            self.click(share[0] + MONITOR_FROM_SHARE[0], share[1] + MONITOR_FROM_SHARE[1])
            time.sleep(0.3)
        self.click(*share)

    def cancel(self, timeout_s: float = 30.0, evidence: Path | None = None) -> None:
        """Press the dialog's Cancel, at the other end of its header bar."""
        share = self.wait_for_dialog(timeout_s, evidence)
        self.click(share[0] + CANCEL_FROM_SHARE[0], share[1] + CANCEL_FROM_SHARE[1])

    def allow_remote_desktop(self, timeout_s: float = 60.0, evidence: Path | None = None) -> None:
        """Wait for the Remote desktop dialog, allow remote interaction, press Share.

        The switch gets its own time once the dialog shows: on a loaded machine the
        dialog can take most of `timeout_s` to appear (GTK 4 starting cold)."""
        share = self.wait_for_dialog(timeout_s, evidence)
        deadline = time.monotonic() + 20.0
        switch = (share[0] + SWITCH_FROM_SHARE[0], share[1] + SWITCH_FROM_SHARE[1])
        # Clicked again while it stays off: a click can land before GTK has the
        # pointer's entry into its new window.
        while not self._switch_on(switch):
            if time.monotonic() > deadline:
                self._keep(evidence)
                raise AssertionError(
                    f"the 'Allow remote interaction' switch at {switch} did not turn on"
                )
            self.click(*switch)
        self.click(*share)

    def _switch_on(self, switch: tuple[int, int]) -> bool:
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            if _is_accent(self.screen().getpixel((switch[0] - 12, switch[1]))):
                return True
            time.sleep(0.05)
        return False

    def _keep(self, evidence: Path | None) -> None:
        if evidence is not None:
            with contextlib.suppress(Exception):
                self.screen().save(evidence)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError):
            self._call(RD, self._session, f"{RD}.Session", "Stop")
        self._eyes.close()
        self._connection.close()


def _is_accent(pixel: Any, colour: tuple[int, int, int] = ACCENT) -> bool:
    return all(abs(int(a) - b) <= 24 for a, b in zip(pixel[:3], colour, strict=True))


def _accent_centre(
    image: Image.Image,
    within: tuple[int, int, int, int] | None,
    colour: tuple[int, int, int] = ACCENT,
) -> tuple[int, int] | None:
    """The centre of the topmost button-sized patch of `colour` (sampled every 4 px)."""
    small = image.reduce(4) if within is None else image.crop(within).reduce(4)
    width, height = small.size
    pixels = small.load()
    assert pixels is not None
    hits = [(x, y) for y in range(height) for x in range(width) if _is_accent(pixels[x, y], colour)]
    if not hits:
        return None
    # The header bar's button is the topmost patch (a ticked checkbox, a switch or a
    # focus ring in the same blue sit below it).
    top = min(y for _, y in hits)
    hits = [(x, y) for x, y in hits if y <= top + 10]
    if len(hits) < 40:  # the Share button is ~80x34 px: ~170 samples
        return None
    xs = sorted(x for x, _ in hits)
    ys = sorted(y for _, y in hits)
    left, right, top, bottom = xs[0], xs[-1], ys[0], ys[-1]
    if (right - left) * 4 > 200 or (bottom - top) * 4 > 80:
        return None  # not (only) a button: something else blue is showing
    origin = (0, 0) if within is None else within[:2]
    return origin[0] + (left + right) * 2 + 2, origin[1] + (top + bottom) * 2 + 2


def open_allowed(
    desktop: HeadlessDesktop,
    person: GnomePerson,
    tokens: TokenStore,
    evidence: Path,
    **options: Any,
) -> Backend:
    """open_portal_route on `desktop` (in its environment, so the route reads its keymap),
    with `person` answering the consent dialog meanwhile."""
    options.setdefault("environ", desktop.environ())
    # The portal waits longer than the person does, so a slow dialog fails as the
    # person's own error (with the screen kept as evidence), not as a consent timeout.
    return allowing(
        person,
        evidence,
        lambda: open_portal_route(desktop.bus_address, tokens, consent_timeout_s=120, **options),
    )


def allowing(person: GnomePerson, evidence: Path, open_: Callable[[], Backend]) -> Backend:
    """`open_()`, with `person` allowing the remote desktop dialog it shows meanwhile."""
    failures: list[BaseException] = []

    def answer() -> None:
        try:
            person.allow_remote_desktop(evidence=evidence)
        except BaseException as error:  # re-raised below, in the test's thread
            failures.append(error)

    thread = threading.Thread(target=answer, name="gnome-person")
    thread.start()
    try:
        backend = open_()
    except BaseException:
        thread.join()
        if failures:
            raise failures[0] from None
        raise
    thread.join()
    if failures:
        backend.close()
        raise failures[0]
    return backend
