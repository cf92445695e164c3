"""Typing plans for backends that inject text as Unicode key events (macOS, Windows).

Both OSes take text as UTF-16 code units carried by key events. Line breaks and tabs
go better as their keys (apps bind Enter and Tab to actions, and many ignore a
"\\n" character), and each OS caps how much text one event may carry, so text is
planned here once: runs of characters, named keys between them, and runs cut into
chunks that never split a surrogate pair and, where the cap allows, never split a
user-perceived character (a base letter and its accents, an emoji sequence).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from holodesk.platform.errors import InputError

# Characters typed as the key that produces them; "\r\n" counts as one Enter.
KEY_CHARACTERS: dict[str, str] = {
    "\n": "enter",
    "\r": "enter",
    "\t": "tab",
    "\b": "backspace",
    "\x1b": "escape",
    "\x7f": "delete",
}

_ZWJ = 0x200D

# Characters sent to the OS as one piece, between two checks of the stop signal: few
# enough that a stop cuts typing off within milliseconds (and no backend ever queues
# a whole text before sending it), enough that the round trip per piece costs little.
TEXT_CHUNK_CHARS = 32


@dataclass(frozen=True)
class TextRun:
    """Characters to type as Unicode text."""

    text: str


@dataclass(frozen=True)
class KeyPress:
    """A named key (canonical name) to tap between runs of text."""

    key: str


TextStep = TextRun | KeyPress


def plan_text(text: str) -> list[TextStep]:
    """Split text into runs of characters and the named keys between them.

    Raises InputError for characters no keyboard types: control characters other
    than the ones in KEY_CHARACTERS, and lone surrogates.
    """
    steps: list[TextStep] = []
    run: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        index += 1
        if char in KEY_CHARACTERS:
            if char == "\r" and text[index : index + 1] == "\n":
                index += 1
            if run:
                steps.append(TextRun("".join(run)))
                run = []
            steps.append(KeyPress(KEY_CHARACTERS[char]))
            continue
        category = unicodedata.category(char)
        if category == "Cc":
            raise InputError(f"cannot type the control character U+{ord(char):04X}")
        if category == "Cs":
            raise InputError(
                f"cannot type the lone surrogate U+{ord(char):04X}: the text is not valid Unicode"
            )
        run.append(char)
    if run:
        steps.append(TextRun("".join(run)))
    return steps


def utf16_units(text: str) -> list[int]:
    """The UTF-16 code units of text (a character above U+FFFF is a surrogate pair)."""
    data = text.encode("utf-16-le")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def chunk_utf16(text: str, max_units: int) -> list[str]:
    """Cut text into pieces of at most `max_units` UTF-16 units each.

    Cuts fall between user-perceived characters; one longer than `max_units` (a long
    emoji sequence) is cut between code points, so a surrogate pair is never split.
    """
    if max_units < 2:
        raise ValueError(
            f"a chunk must hold at least one surrogate pair (2 units), not {max_units}"
        )
    chunks: list[str] = []
    current = ""
    size = 0
    for cluster in _clusters(text):
        length = utf16_length(cluster)
        if length > max_units:
            for char in cluster:
                units = utf16_length(char)
                if size + units > max_units:
                    chunks.append(current)
                    current, size = "", 0
                current += char
                size += units
            continue
        if size + length > max_units:
            chunks.append(current)
            current, size = "", 0
        current += cluster
        size += length
    if current:
        chunks.append(current)
    return chunks


def chunk_text(text: str, size: int = TEXT_CHUNK_CHARS) -> Iterator[str]:
    """Text in pieces of at most `size` code points (a longer single user-perceived
    character stays whole), cut between user-perceived characters; lazily, so typing
    a long text costs time and memory in proportion to it."""
    if size < 1:
        raise ValueError(f"a text chunk must hold at least one character, not {size}")
    current = ""
    for cluster in _clusters(text):
        if current and len(current) + len(cluster) > size:
            yield current
            current = ""
        current += cluster
    if current:
        yield current


def _clusters(text: str) -> Iterator[str]:
    """An approximation of extended grapheme clusters, enough to keep accents and emoji whole."""
    cluster = ""
    previous = -1
    for char in text:
        code = ord(char)
        if cluster and (_extends(code) or previous == _ZWJ or _pairs_flag(cluster, code)):
            cluster += char
        else:
            if cluster:
                yield cluster
            cluster = char
        previous = code
    if cluster:
        yield cluster


def _extends(code: int) -> bool:
    """True for code points that attach to the character before them."""
    return (
        unicodedata.category(chr(code)) in ("Mn", "Mc", "Me")
        or code == _ZWJ
        or 0xFE00 <= code <= 0xFE0F  # variation selectors
        or 0xE0100 <= code <= 0xE01EF  # variation selectors supplement
        or 0x1F3FB <= code <= 0x1F3FF  # emoji skin-tone modifiers
        or 0xE0020 <= code <= 0xE007F  # emoji tag sequences (subdivision flags)
    )


def _is_regional_indicator(code: int) -> bool:
    return 0x1F1E6 <= code <= 0x1F1FF


def _pairs_flag(cluster: str, code: int) -> bool:
    """A regional indicator joins a lone one before it: two of them make a flag."""
    return (
        _is_regional_indicator(code) and len(cluster) == 1 and _is_regional_indicator(ord(cluster))
    )
