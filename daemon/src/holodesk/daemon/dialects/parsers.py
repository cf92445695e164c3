"""Output parsers by name; a dialect's `parser` field picks one.

A new model family adds a parser here and a DialectSpec in the
registry; nothing else in the daemon changes.
"""

from __future__ import annotations

from holodesk.daemon.dialects.base import OutputParser
from holodesk.daemon.dialects.holo import HoloJsonParser
from holodesk.daemon.dialects.uitars import UiTarsParser


class DialectConfigError(ValueError):
    """A dialect definition (built-in or from a file) is unusable."""


_PARSERS: dict[str, OutputParser] = {
    HoloJsonParser.name: HoloJsonParser(),
    UiTarsParser.name: UiTarsParser(),
}


def register_parser(parser: OutputParser) -> None:
    _PARSERS[parser.name] = parser


def get_parser(name: str) -> OutputParser:
    try:
        return _PARSERS[name]
    except KeyError:
        known = ", ".join(sorted(_PARSERS))
        raise DialectConfigError(f"unknown output parser {name!r}; known: {known}") from None
