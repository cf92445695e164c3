"""Which keys the portal's NotifyKeyboardKeysym really types, on GNOME and on KDE Plasma 5.27.

NotifyKeyboardKeysym takes any keysym, but the desktop keeps one only when its
keymap has a key for it. What Debian 12's versions do with a keysym:

- mutter 43 (meta-virtual-input-device-native.c): the first key, in keycode
  order, that has the keysym at any level of the *active* layout; level 2 is
  pressed with the key that has Shift_L, level 3 with the one that has
  ISO_Level3_Shift, a higher level with no modifier at all (another character);
  a keysym no key has is dropped ("No keycode found for keyval ... in current
  group" in mutter's log, nothing to the caller).
- xdg-desktop-portal-kde 5.27 (waylandintegration.cpp): the same search in the
  keymap's *first* layout (its own xkb state never changes), KEY_LEFTSHIFT for
  level 2, KEY_RIGHTALT for level 3, and keycodes sent on through KWin's fake
  input, which KWin reads in its active layout; an unknown keysym is dropped.

`PortalKeysyms` replays that search and keystroke with libxkbcommon on the
compositor's own keymap (`seat_keymap`) for every layout in it (which one is
active is told only to the focused client, never to holodesk), picks the keysym
that arrives (a keymap's EuroSign for "€" rather than U+20AC, which it lacks),
and refuses input with any key that would not arrive, before any of it is sent.

There is no other way to type what the keymap lacks on these desktops, which is
why refusing is the answer (what was looked at, on Debian 12):
- xdg-desktop-portal 1.16 has no Clipboard portal (1.17 added it, for
  RemoteDesktop version 2 sessions), and neither GNOME's nor KDE's backend lists one;
- the input-method Unicode entry (Ctrl+Shift+U, then hex) is GTK's and IBus's,
  read by the focused app: an app without it (Tk, Qt without IBus, a terminal)
  takes the keys as text, and holodesk cannot see which app has the focus;
- mutter offers a client neither a virtual keyboard nor a data-control
  clipboard; KWin 5.27 keeps its fake input to the portal's own program and does
  offer wlr-data-control, but a paste needs the focused app's own paste key
  (Ctrl+V; Ctrl+Shift+V in a terminal, where Ctrl+V types a control character)
  and replaces the user's clipboard, so its arrival is no more certain.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from holodesk.platform.errors import InputError, PlatformError
from holodesk.platform.wayland.consent import kde_remote_desktop_version
from holodesk.platform.wayland.dbus import PortalBus
from holodesk.platform.wayland.seat_keymap import KeymapUnknownError, SeatKeymap
from holodesk.platform.wayland.untypeable import ADD_LAYOUT_FIX, refusal
from holodesk.platform.wayland.xkb import EVDEV_OFFSET, XkbError, XkbKeymap
from holodesk.platform.x11.keysyms import keysym_alternatives, keysym_for_key

log = logging.getLogger(__name__)

SHIFT_L = 0xFFE1
ISO_LEVEL3_SHIFT = 0xFE03
KEY_LEFTSHIFT = 42
KEY_RIGHTALT = 100
# The highest keycode XWayland, and so every X11 app, can receive (X11's limit).
X11_MAX_KEYCODE = 255
# Where a keysym is: (keycode, level) of its first key, per layout.
KeyIndex = dict[int, tuple[int, int]]


class KeysymSource(Protocol):
    """The keysym to send for each key (a canonical name or one character)."""

    def keysyms(self, keys: Iterable[str]) -> dict[str, int]:
        """Every key's keysym; InputError naming every key that would not arrive,
        raised before the caller sends anything."""
        ...

    def close(self) -> None:
        """Let go of what it holds (a connection to the compositor)."""
        ...


class AnyKeysym:
    """A portal whose compositor makes a key for any keysym (KWin 6's fake input
    binds a spare key; tests' stand-in portal does as well): nothing is refused."""

    def keysyms(self, keys: Iterable[str]) -> dict[str, int]:
        return {key: keysym_for_key(key) for key in keys}

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class PortalTyping:
    """How one portal backend turns a keysym into keystrokes (see the module's docstring)."""

    desktop: str
    searches_first_layout: bool
    # evdev keycodes it presses for levels 2 and 3; None: the first key with Shift_L
    # (ISO_Level3_Shift) in the active layout, as mutter picks them.
    shift_evdev: int | None = None
    level3_evdev: int | None = None


MUTTER = PortalTyping("GNOME (mutter)", searches_first_layout=False)
KDE_5 = PortalTyping(
    "KDE Plasma 5 (xdg-desktop-portal-kde)",
    searches_first_layout=True,
    shift_evdev=KEY_LEFTSHIFT,
    level3_evdev=KEY_RIGHTALT,
)


def portal_typing(bus: PortalBus, environ: Mapping[str, str]) -> PortalTyping:
    """KDE 5's way when xdg-desktop-portal-kde at RemoteDesktop version 1 serves it,
    else mutter's (the same search, the active layout's modifier keys), named for
    the desktop `environ` names."""
    if kde_remote_desktop_version(bus, environ) == 1:
        return KDE_5
    desktops = environ.get("XDG_CURRENT_DESKTOP", "")
    if any(name.strip().lower() == "gnome" for name in desktops.split(":")):
        return MUTTER
    return PortalTyping(f"this desktop ({desktops or 'XDG_CURRENT_DESKTOP unset'})", False)


class PortalKeysyms:
    """The keysyms that arrive through this desktop's portal, from its keymap.

    `keymap`: the compositor's keymap now (`SeatKeymap.current`). `assumed`: when
    that keymap could not be read, why (the keymap given is then a stand-in, the
    compositors' default US layout, and every refusal says so).
    """

    def __init__(
        self,
        typing: PortalTyping,
        keymap: Callable[[], XkbKeymap],
        assumed: str = "",
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.typing = typing
        self._keymap = keymap
        self.assumed = assumed
        self._on_close = on_close
        self._indexed: tuple[XkbKeymap, list[KeyIndex]] | None = None

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()

    def keysyms(self, keys: Iterable[str]) -> dict[str, int]:
        keymap = self._keymap()
        index = self._index(keymap)
        found: dict[str, int] = {}
        missing: list[str] = []
        for key in dict.fromkeys(keys):
            keysym = self._arriving(keymap, index, key)
            if keysym is None:
                missing.append(key)
            else:
                found[key] = keysym
        if missing:
            raise self._refusal(keymap, *self._sorted(keymap, index, missing))
        return found

    def _sorted(
        self, keymap: XkbKeymap, index: list[KeyIndex], keys: list[str]
    ) -> tuple[list[str], list[str], list[str]]:
        """`keys` that would not arrive, by why: no key has them; the key found for them
        types something else (its level needs a modifier the desktop does not press,
        as the keypad's digits need Num Lock; KDE's key found in the first layout is
        another in the active one); their only key is beyond X11's reach (the stock
        keymaps' EuroSign, evdev's KEY_EURO), so XWayland apps never get it."""
        absent: list[str] = []
        level: list[str] = []
        far: list[str] = []
        for key in keys:
            if self._arriving(keymap, index, key, x11=False) is not None:
                far.append(key)
            elif all(
                any(keysym in layout for keysym in _candidates(key))
                for layout in self._searched(index)
            ):
                level.append(key)
            else:
                absent.append(key)
        return absent, level, far

    def _searched(self, index: list[KeyIndex]) -> list[KeyIndex]:
        return index[:1] if self.typing.searches_first_layout else index

    def _index(self, keymap: XkbKeymap) -> list[KeyIndex]:
        """Per layout, each keysym's first key as the compositors search: keycodes up
        to the keymap's last one, which their loops leave out, levels in order."""
        if self._indexed is not None and self._indexed[0] is keymap:
            return self._indexed[1]
        indices: list[KeyIndex] = []
        for layout in range(len(keymap.layouts)):
            index: KeyIndex = {}
            for keycode in range(keymap.min_keycode, keymap.max_keycode):
                for level in range(keymap.levels(keycode, layout)):
                    for keysym in keymap.keysyms(keycode, layout, level):
                        index.setdefault(keysym, (keycode, level))
            indices.append(index)
        self._indexed = (keymap, indices)
        return indices

    def _arriving(
        self, keymap: XkbKeymap, index: list[KeyIndex], key: str, *, x11: bool = True
    ) -> int | None:
        """The keysym that types `key` whichever layout is active, or None; `x11`:
        in X11 apps too, which receive no keycode above 255 (the focused app may be
        one, on XWayland, and holodesk cannot tell)."""
        char = key if len(key) == 1 else None
        for keysym in _candidates(key):
            if all(
                self._arrives(keymap, index, keysym, active, char, x11)
                for active in range(len(keymap.layouts))
            ):
                return keysym
        return None

    def _arrives(
        self,
        keymap: XkbKeymap,
        index: list[KeyIndex],
        keysym: int,
        active: int,
        char: str | None,
        x11: bool,
    ) -> bool:
        searched = 0 if self.typing.searches_first_layout else active
        found = index[searched].get(keysym)
        if found is None:
            return False
        keycode, level = found
        held = self._modifier_keys(index[active], level)
        if x11 and max([keycode, *held]) > X11_MAX_KEYCODE:
            return False
        typed = keymap.typed(keycode, active, held)
        return typed.char == char if char is not None else keysym in typed.keysyms

    def _modifier_keys(self, active: KeyIndex, level: int) -> list[int]:
        """The keys the desktop presses around a key found at `level` (0-based)."""
        typing = self.typing
        if level == 1:
            evdev, keysym = typing.shift_evdev, SHIFT_L
        elif level == 2:
            evdev, keysym = typing.level3_evdev, ISO_LEVEL3_SHIFT
        else:
            return []  # level 1 needs none; mutter and KDE press none above level 3
        if evdev is not None:
            return [evdev + EVDEV_OFFSET]
        found = active.get(keysym)
        return [] if found is None else [found[0]]

    def _refusal(
        self, keymap: XkbKeymap, absent: list[str], level: list[str], far: list[str]
    ) -> InputError:
        layouts = ", ".join(keymap.layouts)
        several = len(keymap.layouts) > 1
        if self.assumed:
            cause = (
                f"holodesk could not read the keyboard layout of {self.typing.desktop} "
                f"({self.assumed}), so it assumes the default, {layouts}, and through the "
                "RemoteDesktop portal only what that layout has a key for arrives"
            )
            lacking = "that layout has no key for"
            fix = (
                "run holodesk inside the Wayland session (WAYLAND_DISPLAY set), so it reads "
                f"the real layout; or {ADD_LAYOUT_FIX}"
            )
        else:
            dropped = "and drops or mistypes the rest without a word"
            if several:
                cause = (
                    f"{self.typing.desktop} types through the RemoteDesktop portal only what "
                    f"its active keyboard layout has a key for, {dropped}; holodesk cannot see "
                    f"which of its layouts ({layouts}) is active"
                )
                lacking = "not all of them have a key for"
            else:
                cause = (
                    f"{self.typing.desktop} types through the RemoteDesktop portal only what "
                    f"its keyboard layout ({layouts}) has a key for, {dropped}"
                )
                lacking = "that layout has no key for"
            fix = ADD_LAYOUT_FIX + (
                "; with several layouts, each must have them (or keep only one)" if several else ""
            )
        if any(key.startswith("kp_") for key in level):
            fix += "; a keypad key's character types as text instead ('1' for kp_1)"
        groups = [
            (lacking, absent),
            ("the key the portal would press for these types something else", level),
            (
                f"these are only on a key above keycode {X11_MAX_KEYCODE}, which X11 apps on "
                "XWayland never receive",
                far,
            ),
        ]
        return refusal(cause, groups, fix)


def _candidates(key: str) -> tuple[int, ...]:
    """The keysyms that could type `key`: a character's every spelling (EuroSign and
    U+20AC), a named key's one."""
    keysym = keysym_for_key(key)
    return keysym_alternatives(keysym) if len(key) == 1 else (keysym,)


def portal_keysyms(bus: PortalBus, environ: Mapping[str, str] | None = None) -> KeysymSource:
    """The keysyms this desktop's portal types, from its compositor's keymap (asked
    on `environ`'s WAYLAND_DISPLAY, default this process's).

    Where the keymap cannot be read, the compositors' default (US) stands in for
    it, and refusals say so. Ask after the portal session's keyboard exists: a
    headless mutter has no keyboard (and so no keymap) before.
    """
    env = os.environ if environ is None else environ
    typing = portal_typing(bus, env)
    try:
        seat = SeatKeymap.open(env)
    except KeymapUnknownError as error:
        log.warning("the keyboard layout is unknown (%s): assuming US for the portal", error)
        return _assumed_us(typing, str(error))
    return PortalKeysyms(typing, seat.current, on_close=seat.close)


def _assumed_us(typing: PortalTyping, why: str) -> KeysymSource:
    try:
        default = XkbKeymap.from_names("us")
    except (XkbError, PlatformError) as error:
        return AsciiKeysyms(typing, f"{why}; {error}")
    return PortalKeysyms(typing, lambda: default, why)


class AsciiKeysyms:
    """Where no keymap can be compiled at all (no libxkbcommon, no xkeyboard-config):
    the named keys and printable ASCII, which every Latin layout has, and no more."""

    def __init__(self, typing: PortalTyping, why: str) -> None:
        self.typing = typing
        self.why = why

    def keysyms(self, keys: Iterable[str]) -> dict[str, int]:
        keys = list(dict.fromkeys(keys))
        missing = [k for k in keys if len(k) == 1 and not " " <= k <= "~"]
        if missing:
            raise refusal(
                f"holodesk could not read the keyboard layout of {self.typing.desktop} "
                f"({self.why}), so through the RemoteDesktop portal it types only printable "
                "ASCII, which every Latin layout has",
                [("that leaves out", missing)],
                "install libxkbcommon0 and xkb-data, and run holodesk inside the Wayland "
                f"session (WAYLAND_DISPLAY set), so it reads the real layout; or {ADD_LAYOUT_FIX}",
            )
        return {key: keysym_for_key(key) for key in keys}

    def close(self) -> None:
        pass
