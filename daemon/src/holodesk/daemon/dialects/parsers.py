"""The dialect configuration error, and finding an output parser by name.

The parsers themselves belong to their families (holo/parser.py, uitars/parser.py,
...); the registry (registry.PARSERS) holds every one, made once at import from
registry.FAMILIES. A plain `Dialect` built without a parser finds its spec's among
the template dialects' (registry.TEMPLATE_PARSERS).
"""

from __future__ import annotations

from collections.abc import Mapping

from holodesk.daemon.dialects.base import OutputParser


class DialectConfigError(ValueError):
    """A dialect definition (built-in or from a file) is unusable."""


def get_parser(name: str, parsers: Mapping[str, OutputParser] | None = None) -> OutputParser:
    """`parsers`: default, the template dialects' (registry.TEMPLATE_PARSERS)."""
    if parsers is None:
        # Read when called: the registry imports every family, and they import this.
        from holodesk.daemon.dialects.registry import TEMPLATE_PARSERS

        parsers = TEMPLATE_PARSERS
    try:
        return parsers[name]
    except KeyError:
        known = ", ".join(sorted(parsers))
        raise DialectConfigError(f"unknown output parser {name!r}; known: {known}") from None
