"""The dialect configuration error, and finding an output parser by name.

The parsers themselves belong to their families (holo/parser.py, uitars/parser.py,
...); the registry (registry.PARSERS) holds every one, made once at import from
registry.FAMILIES, and hands each dialect its parser (registry.dialect_for).
"""

from __future__ import annotations

from collections.abc import Mapping

from holodesk.daemon.dialects.base import OutputParser


class DialectConfigError(ValueError):
    """A dialect definition (built-in or from a file) is unusable."""


def get_parser(name: str, parsers: Mapping[str, OutputParser]) -> OutputParser:
    try:
        return parsers[name]
    except KeyError:
        known = ", ".join(sorted(parsers))
        raise DialectConfigError(f"unknown output parser {name!r}; known: {known}") from None
