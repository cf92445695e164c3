"""Keysyms for VNC key events, and which characters a server can type.

RFB key events carry X11 keysyms whatever the server's OS: Latin-1 characters
are their code point, any other character is the Unicode keysym 0x01000000 +
code point (the tables are shared with the X11 backend). What a server does
with a keysym that no key of its keyboard produces differs, and the protocol
never says whether a key event was typed or dropped:

- TigerVNC's Xvnc binds the keysym to a keycode without symbols and keeps the
  binding for good. A stock keymap has about 20 such keycodes, so after about
  20 distinct characters beyond the keyboard (é, ñ and € count, on a US
  layout; 19 on Debian's Xvnc) it drops every new one, saying so only in its own log ("Failure
  adding new keysym"). Servers of its family are told apart by their
  acknowledging QEMU extended key events (QEMU does too, and is named).
- x11vnc binds such keysyms too (-add_keysyms, on by default), on the same
  kind of spare keycodes, and frees them only now and then: a burst of more
  than about 20 new characters loses the rest. It cannot be told apart from
  other libvncserver servers, so no budget is assumed for it.
- QEMU's VNC server turns keysyms into scancodes through its keymap (-k, US
  by default) and drops those not on it.
- Apple's Screen Sharing (RFB 3.889) maps keysyms onto the Mac's keyboard
  layout and drops the rest.

So: servers known to drop keysyms are held to ASCII; TigerVNC-family servers
get a budget of distinct characters beyond ASCII, counted in `BOOK` for each
server this process talks to; beyond either, typing raises InputError naming
the character and the server instead of losing text on the far side. Both
are guesses a caller can override (`unicode_keysyms`, `keysym_budget`).

A newly bound keysym also changes the server's keymap under the running
apps, and X clients catch up a moment later (Tk mistypes the key pressed
just before the next change), so the input driver pauses after each
character's first use on a server.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from holodesk.platform.errors import InputError
from holodesk.platform.vnc.handshake import ServerInfo
from holodesk.platform.vnc.protocol import Version
from holodesk.platform.x11.keysyms import NAMED_KEYSYMS, keysym_for_char, keysym_for_key
from holodesk.values.keys import KEYPAD_DIGITS

__all__ = [
    "BOOK",
    "NAMED_KEYSYMS",
    "NUM_LOCK_KEYPAD_KEYS",
    "KeysymBook",
    "KeysymSupport",
    "beyond_ascii",
    "keypad_refusal",
    "keysym_for_char",
    "keysym_for_key",
    "support_for",
    "validate_budget",
]

APPLE_VERSION = Version(3, 889)
# Keycodes without symbols that Debian's Xvnc (TigerVNC 1.12) can bind (measured).
TIGERVNC_SPARE_KEYCODES = 19


@dataclass(frozen=True)
class KeysymSupport:
    """What a server types beyond ASCII: nothing, up to `budget` characters, or anything."""

    unicode: bool
    budget: int | None
    reason: str

    def check(self, chars: list[str], server: ServerInfo, bound: set[int]) -> None:
        """Raise InputError for the first character the server would drop.

        `bound`: keysyms beyond ASCII this server has been sent before (its
        bindings, which stay usable).
        """
        used = set(bound)
        for char in chars:
            if not beyond_ascii(char):
                continue
            if not self.unicode:
                raise InputError(
                    f"{server.describe()} cannot type {char!r} (U+{ord(char):04X}): "
                    f"{self.reason}. Type ASCII only on this server, or, if it does map "
                    "Unicode keysyms, open the backend with unicode_keysyms=True"
                )
            keysym = keysym_for_char(char)
            if keysym in used:
                continue
            if self.budget is not None and len(used) >= self.budget:
                raise InputError(
                    f"{server.describe()} cannot type {char!r} (U+{ord(char):04X}): "
                    f"{self.reason}, and this process has used all {self.budget} already "
                    "(more would be dropped without a trace). Restart that VNC server to "
                    "free them, or open the backend with keysym_budget=None if this "
                    "server frees its bindings"
                )
            used.add(keysym)


def support_for(
    server: ServerInfo, unicode_keysyms: bool | None, keysym_budget: int | str | None
) -> KeysymSupport:
    """What `server` types beyond ASCII; explicit arguments override the guess.

    `keysym_budget`: "auto" (by server family), None (no limit) or a count.
    """
    validate_budget(keysym_budget)
    unicode, budget, reason = _guess(server)
    if unicode_keysyms is not None:
        stated = "any keysym" if unicode_keysyms else "ASCII only"
        unicode, reason = unicode_keysyms, f"it was declared to type {stated}"
    if keysym_budget != "auto":
        budget = keysym_budget if isinstance(keysym_budget, int) else None
        if budget is not None:
            reason = f"it was declared to bind at most {budget} characters beyond its keyboard"
    return KeysymSupport(unicode, budget, reason)


def validate_budget(keysym_budget: int | str | None) -> None:
    """keysym_budget is "auto", None or a count; anything else is a caller's mistake."""
    count = isinstance(keysym_budget, int) and not isinstance(keysym_budget, bool)
    if not (keysym_budget in ("auto", None) or (count and int(keysym_budget or 0) >= 0)):
        raise ValueError(f'keysym_budget must be "auto", None or a count, not {keysym_budget!r}')


def _guess(server: ServerInfo) -> tuple[bool, int | None, str]:
    if server.version == APPLE_VERSION:
        return False, None, "Apple's Screen Sharing maps keysyms onto the Mac's layout only"
    if server.name.startswith("QEMU"):
        return False, None, "QEMU's VNC server maps keysyms through its keymap and drops the rest"
    if server.qemu_key_events:
        return (
            True,
            TIGERVNC_SPARE_KEYCODES,
            "a TigerVNC-family server binds each character beyond its keyboard to one of "
            f"its ~{TIGERVNC_SPARE_KEYCODES} spare keycodes for good",
        )
    return True, None, "the server binds keysyms its keyboard lacks"


# Keypad keys that share their key with a cursor key (KP_0 with KP_Insert), which
# Num Lock selects between; kp_add, kp_enter and the like have keys of their own.
NUM_LOCK_KEYPAD_KEYS: frozenset[str] = frozenset((*KEYPAD_DIGITS, "kp_decimal"))


def keypad_refusal(server: ServerInfo, key: str) -> str | None:
    """Why `server` cannot type the keypad key `key` as itself, or None when it can.

    A keysym such as KP_0 names the keypad digit, but the server presses a key
    for it, and that key is KP_Insert unless Num Lock is on there. TigerVNC's
    Xvnc sets Num Lock itself to type it (measured). x11vnc presses the key
    as it is (KP_Insert arrives, with Num Lock off: measured), and other
    servers are unknown; the client cannot see a server's Num Lock, so those
    are refused rather than typing a cursor key in the digit's place.
    """
    if key not in NUM_LOCK_KEYPAD_KEYS:
        return None
    if server.qemu_key_events and not server.name.startswith("QEMU"):
        return None  # the TigerVNC family
    return (
        f"{server.describe()} cannot type the keypad key {key!r} as itself: it presses "
        "the key with the server's Num Lock as it is (KP_Insert instead of kp_0 while "
        "Num Lock is off), and a VNC client cannot see that state; press "
        f"{'.' if key == 'kp_decimal' else key[3:]!r} instead"
    )


def beyond_ascii(char: str) -> bool:
    """A character no US keyboard has a key for (the named-key characters have keys)."""
    return len(char) == 1 and not (" " <= char <= "~" or char in "\n\r\t\b\x1b\x7f")


class KeysymBook:
    """Keysyms beyond ASCII sent to each server by this process: its bindings there.

    Shared by every backend in the process, so two backends on one server
    count together. Forgotten when a connection is lost (the server may have
    restarted with a fresh keymap).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sent: dict[str, set[int]] = {}

    def bound(self, address: str) -> set[int]:
        with self._lock:
            return set(self._sent.get(address, ()))

    def record(self, address: str, keysym: int) -> None:
        with self._lock:
            self._sent.setdefault(address, set()).add(keysym)

    def forget(self, address: str) -> None:
        with self._lock:
            self._sent.pop(address, None)


BOOK = KeysymBook()
