"""The X server's keyboard mapping, and temporary bindings onto spare keycodes.

A character no key types (é on a US layout, 日, €) is typed by binding its
keysym to a keycode that has no keysyms, pressing that keycode, and later
restoring the empty mapping. This class reads and writes the mapping and keeps
the books (which keycodes are bound, held, last used); when to wait and when to
restore is the input driver's decision.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from holodesk.platform.x11.keysyms import char_for_keysym, keysym_alternatives


@dataclass(frozen=True)
class Stroke:
    """How to produce a keysym: which keycode, and whether Shift selects it."""

    keycode: int
    shift: bool = False


@dataclass
class Binding:
    """A keycode we bound: what it had before, and when it was last pressed."""

    original: tuple[int, ...]
    keysym: int
    last_used: float
    held: int = 0


class Keymap:
    """A snapshot of the core keyboard mapping plus the bindings made through it."""

    def __init__(self, display: Any) -> None:
        self._display = display
        self._first: int = display.display.info.min_keycode
        self._count: int = display.display.info.max_keycode - self._first + 1
        self._rows: list[tuple[int, ...]] = []
        self._index: dict[int, Stroke] = {}
        self._bound: dict[int, Binding] = {}
        self.refresh()

    def refresh(self) -> None:
        """Re-read the mapping: the user or another program may have changed it."""
        rows = self._display.get_keyboard_mapping(self._first, self._count)
        self._rows = [tuple(row) for row in rows]
        self._index = _index(self._first, self._rows)

    def rows(self) -> list[tuple[int, ...]]:
        """The mapping as last read, one row of keysyms per keycode from min_keycode."""
        return list(self._rows)

    def find(self, keysym: int) -> Stroke | None:
        """A keycode (and shift level) that types `keysym` now, if any."""
        for candidate in keysym_alternatives(keysym):
            stroke = self._index.get(candidate)
            if stroke is not None:
                return stroke
        return None

    def bindable(self, exclude: Iterable[int] = ()) -> list[int]:
        """Keycodes a new keysym may take: free ones first, then our least recently used."""
        excluded = set(exclude)
        free = [
            self._first + offset
            for offset, row in enumerate(self._rows)
            if not any(row) and self._first + offset not in self._bound
        ]
        # Highest first: low spare keycodes (8 and the like) are often reserved.
        free.sort(reverse=True)
        reusable = sorted(
            (code for code, b in self._bound.items() if not b.held and code not in excluded),
            key=lambda code: self._bound[code].last_used,
        )
        return free + reusable

    def bind(self, keycode: int, keysym: int, now: float) -> Stroke:
        """Make `keycode` type `keysym` (both shift levels, so a held Shift cannot change it)."""
        offset = keycode - self._first
        previous = self._bound.get(keycode)
        original = previous.original if previous else self._rows[offset]
        self._display.change_keyboard_mapping(keycode, [(keysym, keysym)])
        self._rows[offset] = (keysym, keysym)
        self._index = _index(self._first, self._rows)
        self._bound[keycode] = Binding(original, keysym, now)
        return Stroke(keycode)

    def binding(self, keycode: int) -> Binding | None:
        """Our books on `keycode`, if we bound it."""
        return self._bound.get(keycode)

    def bound_keycodes(self) -> list[int]:
        return list(self._bound)

    def restore(self, keycodes: Iterable[int]) -> None:
        """Give bound keycodes back their original (empty) mapping."""
        for keycode in list(keycodes):
            binding = self._bound.pop(keycode, None)
            if binding is None:
                continue
            self._display.change_keyboard_mapping(keycode, [binding.original])
            self._rows[keycode - self._first] = binding.original
        self._index = _index(self._first, self._rows)


def _index(first: int, rows: Sequence[tuple[int, ...]]) -> dict[int, Stroke]:
    """keysym -> the simplest stroke: unshifted before shifted, low keycodes first.

    Only group 1 (columns 0 and 1) counts: other groups and levels need modifier
    state this driver does not set up, so their keysyms are bound afresh instead.
    """
    index: dict[int, Stroke] = {}
    for column, shift in ((0, False), (1, True)):
        for offset, row in enumerate(rows):
            keysym = _level(row, column)
            if keysym and keysym not in index:
                index[keysym] = Stroke(first + offset, shift)
    return index


def _level(row: tuple[int, ...], column: int) -> int:
    if column < len(row) and row[column]:
        return row[column]
    if column == 1 and row and row[0]:
        # X's rule: a lone lower-case Latin-1 letter gets its upper case on Shift.
        char = char_for_keysym(row[0])
        if char is not None and char.upper() != char and len(char.upper()) == 1:
            upper = ord(char.upper())
            return upper if 0x20 <= upper <= 0xFF else 0
    return 0
