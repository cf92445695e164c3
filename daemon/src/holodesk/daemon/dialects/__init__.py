"""Dialects: how a model family is prompted and how its answers become actions.

Built-in: holotron (default; Holotron-12B, a guess to validate on a GPU host),
holo / holo1.5 (H Company JSON), uitars / uitars1.0 (ByteDance UI-TARS text).

Import from here: `get_dialect`, `load_dialect`, `Dialect`, `DialectParseError`.
"""

from holodesk.daemon.dialects.base import DialectParseError, LocatedTarget, ParsedStep
from holodesk.daemon.dialects.dialect import Dialect
from holodesk.daemon.dialects.parsers import DialectConfigError
from holodesk.daemon.dialects.registry import (
    DEFAULT_DIALECT,
    dialect_names,
    get_dialect,
    load_dialect,
)

__all__ = [
    "DEFAULT_DIALECT",
    "Dialect",
    "DialectConfigError",
    "DialectParseError",
    "LocatedTarget",
    "ParsedStep",
    "dialect_names",
    "get_dialect",
    "load_dialect",
]
