"""A model family as one value: the registry's unit (registry.FAMILIES, a line each).

A family is a package under dialects/ (holo, uitars, hdesktop, nemotron) that ends
in a `FAMILY = Family(...)`: its built-in dialects (specs), the output parsers they
name, and, for a parser whose conversation is built in code rather than from the
spec's templates, the `Dialect` class that builds it. Like a vLLM model registry
entry, it names what the family brings; nothing outside its package and the one
registry line knows it exists. docs/dialects/adding-a-family.md walks through one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from holodesk.daemon.dialects.base import OutputParser
from holodesk.daemon.dialects.spec import DialectSpec

if TYPE_CHECKING:
    from holodesk.daemon.dialects.dialect import Dialect


@dataclass(frozen=True)
class Family:
    """`name`: the family's, for messages. `specs`: its built-in dialects. `parsers`:
    the output parsers its specs name (a spec's `parser` field). `dialect_types`:
    parser name -> the Dialect subclass of its dialects; a parser not named here gets
    a plain `Dialect`, whose conversation is the spec's templates (prompt.py)."""

    name: str
    specs: tuple[DialectSpec, ...]
    parsers: tuple[OutputParser, ...]
    dialect_types: Mapping[str, type[Dialect]] = field(default_factory=lambda: MappingProxyType({}))
