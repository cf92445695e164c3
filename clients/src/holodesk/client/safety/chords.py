"""Key chords in the contract's vocabulary, as sets, for the denylist."""

from __future__ import annotations

from dataclasses import dataclass

from holodesk.platform.errors import UnknownKeyError
from holodesk.platform.keys import normalize_key, side_neutral

Chord = frozenset[str]


def key_of(name: str) -> str:
    """The canonical key, letters folded to lowercase ("L" and "l" are one key) and
    sided modifiers to their side-neutral one (ctrl_r+alt+delete is ctrl+alt+delete)."""
    key = side_neutral(normalize_key(name))
    return key.lower() if len(key) == 1 else key


def parse_chord(text: str) -> Chord:
    """ "ctrl+alt+delete" -> {"ctrl", "alt", "delete"}; ValueError names the bad part."""
    parts = [part.strip() for part in text.split("+")]
    if not text.strip() or any(not part for part in parts):
        raise ValueError(
            f"key chord {text!r}: write key names joined by '+', e.g. 'ctrl+alt+delete'"
        )
    try:
        return frozenset(key_of(part) for part in parts)
    except UnknownKeyError as error:
        raise ValueError(f"key chord {text!r}: {error}") from None


@dataclass(frozen=True)
class ChordRule:
    """A denied chord, and the targets (Backend.os) where it is an everyday shortcut
    instead (meta+l locks Windows and GNOME; on macOS it is cmd+L, the address bar)."""

    chord: Chord
    except_on: frozenset[str] = frozenset()

    def applies_on(self, os: str) -> bool:
        return os not in self.except_on


_EXCEPT = " except "


def parse_rule(text: str) -> ChordRule:
    """ "meta+l" or "meta+l except darwin,web"; ValueError names the bad part."""
    chord_text, _, targets = text.partition(_EXCEPT)
    except_on = frozenset(t.strip() for t in targets.split(",") if t.strip())
    if _EXCEPT in text and not except_on:
        raise ValueError(f"key chord {text!r}: name the targets after 'except', e.g. 'darwin'")
    return ChordRule(parse_chord(chord_text), except_on)


def describe(chord: Chord) -> str:
    """Modifiers first, in the usual order, then the other keys."""
    order = {"ctrl": 0, "alt": 1, "shift": 2, "meta": 3}
    return "+".join(sorted(chord, key=lambda key: (order.get(key, 4), key)))
