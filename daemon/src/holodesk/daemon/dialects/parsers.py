"""Output parsers of the template dialects by name; a dialect's `parser` field picks one.

A new model family adds a parser here and a DialectSpec in the registry; nothing
else in the daemon changes. The parsers of dialects built in code (hdesktop, the
tool-calling ones) live with their dialect, which imports this module: the registry
(registry.PARSERS) holds every parser, this table only the ones a plain Dialect
finds by name. Both are read-only mappings, made once at import.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from holodesk.daemon.dialects.base import OutputParser
from holodesk.daemon.dialects.holo import HoloJsonParser
from holodesk.daemon.dialects.uitars import UiTarsParser


class DialectConfigError(ValueError):
    """A dialect definition (built-in or from a file) is unusable."""


TEMPLATE_PARSERS: Mapping[str, OutputParser] = MappingProxyType(
    {
        HoloJsonParser.name: HoloJsonParser(),
        UiTarsParser.name: UiTarsParser(),
    }
)


def get_parser(name: str, parsers: Mapping[str, OutputParser] = TEMPLATE_PARSERS) -> OutputParser:
    try:
        return parsers[name]
    except KeyError:
        known = ", ".join(sorted(parsers))
        raise DialectConfigError(f"unknown output parser {name!r}; known: {known}") from None
