"""libxkbcommon through ctypes: compile a keymap and ask what its keys type.

A Wayland compositor hands every client its keymap as xkb text
(wl_keyboard.keymap). What a key types there depends on key types, levels,
modifier maps and layouts, which only xkb itself resolves faithfully, and the
compositors decide with this very library (mutter, KWin and
xdg-desktop-portal-kde all call xkb_keymap_key_get_syms_by_level on it). Every
Wayland desktop has libxkbcommon, so ctypes needs nothing installed; the
xkeyboard-config data is needed only to compile a keymap from names (tests).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from holodesk.platform.errors import PlatformError

LIBRARY = "xkbcommon"
_FORMAT_TEXT_V1 = 1
_KEY_DOWN = 1
# xkb keycodes are evdev keycodes plus 8 (the X11 convention xkb keeps).
EVDEV_OFFSET = 8


class XkbError(PlatformError):
    """libxkbcommon is missing, or it could not compile a keymap."""


@dataclass(frozen=True)
class Typed:
    """What one key typed: its keysyms, and the character they make (None for none)."""

    keysyms: tuple[int, ...]
    char: str | None


class _RuleNames(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_char_p) for name in ("rules", "model", "layout", "variant", "options")
    ]


@functools.cache
def _library() -> Any:
    """The C library with the prototypes used here; XkbError when it is not installed."""
    path = ctypes.util.find_library(LIBRARY)
    if path is None:
        raise XkbError(
            "libxkbcommon is not installed (apt-get install libxkbcommon0): it reads the "
            "desktop's keyboard layout"
        )
    lib = ctypes.CDLL(path)
    p, u32, i = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int
    syms = ctypes.POINTER(ctypes.POINTER(u32))
    prototypes: dict[str, tuple[Any, list[Any]]] = {
        "xkb_context_new": (p, [i]),
        "xkb_context_unref": (None, [p]),
        "xkb_keymap_new_from_string": (p, [p, ctypes.c_char_p, i, i]),
        "xkb_keymap_new_from_names": (p, [p, ctypes.POINTER(_RuleNames), i]),
        "xkb_keymap_unref": (None, [p]),
        "xkb_keymap_min_keycode": (u32, [p]),
        "xkb_keymap_max_keycode": (u32, [p]),
        "xkb_keymap_num_layouts": (u32, [p]),
        "xkb_keymap_layout_get_name": (ctypes.c_char_p, [p, u32]),
        "xkb_keymap_num_levels_for_key": (u32, [p, u32, u32]),
        "xkb_keymap_key_get_syms_by_level": (i, [p, u32, u32, u32, syms]),
        "xkb_state_new": (p, [p]),
        "xkb_state_unref": (None, [p]),
        "xkb_state_update_mask": (i, [p, u32, u32, u32, u32, u32, u32]),
        "xkb_state_update_key": (i, [p, u32, i]),
        "xkb_state_key_get_syms": (i, [p, u32, syms]),
        "xkb_state_key_get_utf32": (u32, [p, u32]),
    }
    for name, (restype, argtypes) in prototypes.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return lib


class XkbKeymap:
    """A compiled keymap: its layouts, each key's keysyms by level, and what a key types
    with other keys held. Freed with the object."""

    def __init__(self, handle: int, context: int) -> None:
        self._lib = _library()
        self._handle = handle
        self._context = context
        lib = self._lib
        self.min_keycode = int(lib.xkb_keymap_min_keycode(handle))
        self.max_keycode = int(lib.xkb_keymap_max_keycode(handle))
        self.layouts: tuple[str, ...] = tuple(
            (lib.xkb_keymap_layout_get_name(handle, index) or b"").decode(errors="replace")
            or f"layout {index + 1}"
            for index in range(int(lib.xkb_keymap_num_layouts(handle)))
        )

    @classmethod
    def from_text(cls, text: str) -> XkbKeymap:
        """Compile xkb's text format (what wl_keyboard.keymap carries)."""
        lib = _library()
        context = _context(lib)
        handle = lib.xkb_keymap_new_from_string(context, text.encode(), _FORMAT_TEXT_V1, 0)
        if not handle:
            lib.xkb_context_unref(context)
            raise XkbError("libxkbcommon could not compile the compositor's keymap")
        return cls(handle, context)

    @classmethod
    def from_names(
        cls, layout: str, variant: str = "", options: str = "", model: str = "pc105"
    ) -> XkbKeymap:
        """Compile a keymap from RMLVO names (xkeyboard-config's evdev rules), as a
        compositor does from its keyboard settings."""
        lib = _library()
        context = _context(lib)
        names = _RuleNames(
            b"evdev", model.encode(), layout.encode(), variant.encode(), options.encode()
        )
        handle = lib.xkb_keymap_new_from_names(context, ctypes.byref(names), 0)
        if not handle:
            lib.xkb_context_unref(context)
            raise XkbError(f"libxkbcommon could not compile the layout {layout!r}")
        return cls(handle, context)

    def __del__(self) -> None:
        lib = getattr(self, "_lib", None)
        if lib is not None:
            lib.xkb_keymap_unref(self._handle)
            lib.xkb_context_unref(self._context)

    def keycodes(self) -> range:
        """Every keycode of the keymap, in xkb numbering (evdev + 8)."""
        return range(self.min_keycode, self.max_keycode + 1)

    def levels(self, keycode: int, layout: int) -> int:
        return int(self._lib.xkb_keymap_num_levels_for_key(self._handle, keycode, layout))

    def keysyms(self, keycode: int, layout: int, level: int) -> tuple[int, ...]:
        syms = ctypes.POINTER(ctypes.c_uint32)()
        count = self._lib.xkb_keymap_key_get_syms_by_level(
            self._handle, keycode, layout, level, ctypes.byref(syms)
        )
        return tuple(syms[n] for n in range(max(count, 0)))

    def typed(self, keycode: int, layout: int, held: Iterable[int] = ()) -> Typed:
        """What `keycode` types in `layout` while the keys `held` are down, from a
        fresh state: no lock on (Caps Lock, Num Lock), no other key down."""
        lib = self._lib
        state = lib.xkb_state_new(self._handle)
        if not state:
            raise XkbError("libxkbcommon could not make a keyboard state")
        try:
            lib.xkb_state_update_mask(state, 0, 0, 0, 0, 0, layout)
            for key in held:
                lib.xkb_state_update_key(state, key, _KEY_DOWN)
            syms = ctypes.POINTER(ctypes.c_uint32)()
            count = lib.xkb_state_key_get_syms(state, keycode, ctypes.byref(syms))
            keysyms = tuple(syms[n] for n in range(max(count, 0)))
            code = int(lib.xkb_state_key_get_utf32(state, keycode))
        finally:
            lib.xkb_state_unref(state)
        return Typed(keysyms, chr(code) if code else None)


def _context(lib: Any) -> int:
    context = lib.xkb_context_new(0)
    if not context:
        raise XkbError("libxkbcommon could not make a context")
    return int(context)
