"""Built-in dialects by name, and dialects loaded from JSON or TOML files.

Built-in: the families of FAMILIES, one line each (a family is a package under
dialects/, docs/dialects/adding-a-family.md): holotron (the default), holo, holo1.5,
uitars, uitars1.0, hdesktop, and the tool-calling hdesktop-tools and nemotron-tools
(tool_dialect.py). Families outside the tree come in through HOLODESK_DIALECT_FAMILIES.

A file names the built-in it starts from (default: the default dialect) and
overrides any field of it; nested tables (prompts, resize, frame, aliases)
merge key by key:

    base = "holo"
    name = "holotron-pixels"
    coordinates = "resized_pixels"
    [resize]
    kind = "max_box"
    max_width = 1920
    max_height = 1080
    [prompts]
    task = "Task: {task}\\n"
"""

from __future__ import annotations

import importlib
import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from holodesk.daemon.dialects import hdesktop, holo, nemotron, uitars
from holodesk.daemon.dialects.base import OutputParser
from holodesk.daemon.dialects.dialect import Dialect
from holodesk.daemon.dialects.family import Family
from holodesk.daemon.dialects.parsers import DialectConfigError, get_parser
from holodesk.daemon.dialects.spec import DialectSpec

# The built-in families, a line each: a new family is its package and a line here.
FAMILIES: tuple[Family, ...] = (
    holo.FAMILY,  # holotron (the default), holo, holo1.5
    uitars.FAMILY,  # uitars, uitars1.0
    hdesktop.FAMILY,  # hdesktop, hdesktop-tools
    nemotron.FAMILY,  # nemotron-tools
)

# Families outside the tree (a plugin, or one being written): module names, comma
# separated, each defining FAMILY; read once, when this module is first imported.
PLUGINS_VARIABLE = "HOLODESK_DIALECT_FAMILIES"


def _plugins() -> tuple[Family, ...]:
    found: list[Family] = []
    for module_name in filter(
        None, (m.strip() for m in os.environ.get(PLUGINS_VARIABLE, "").split(","))
    ):
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise DialectConfigError(
                f"{PLUGINS_VARIABLE} names {module_name!r}, which does not import: {exc}"
            ) from exc
        family = getattr(module, "FAMILY", None)
        if not isinstance(family, Family):
            raise DialectConfigError(
                f"{PLUGINS_VARIABLE} names {module_name!r}, which defines no FAMILY = Family(...)"
            )
        found.append(family)
    return tuple(found)


def _table(what: str, entries: list[tuple[str, Any]]) -> Mapping[str, Any]:
    """A read-only table; a name two families give is a configuration error."""
    table: dict[str, Any] = {}
    for name, value in entries:
        if name in table:
            raise DialectConfigError(f"two families give the {what} {name!r}")
        table[name] = value
    return MappingProxyType(table)


_FAMILIES = (*FAMILIES, *_plugins())
# Made once at import and read-only: a dialect of another family comes from a file
# (load_dialect), a family's package and its line above, or a plugin.
_BUILTIN: Mapping[str, DialectSpec] = _table(
    "dialect", [(s.name, s) for f in _FAMILIES for s in f.specs]
)
# Every output parser a dialect may name.
PARSERS: Mapping[str, OutputParser] = _table(
    "output parser", [(p.name, p) for f in _FAMILIES for p in f.parsers]
)
# Dialects whose conversation is built in code rather than from templates, by parser
# (a file based on one keeps its layout).
_DIALECT_TYPES: Mapping[str, type[Dialect]] = MappingProxyType(
    {name: kind for f in _FAMILIES for name, kind in f.dialect_types.items()}
)
# The default model is Holotron-12B; its format is a guess to check on a GPU host.
DEFAULT_DIALECT = holo.HOLOTRON.name


def dialect_names() -> tuple[str, ...]:
    return tuple(sorted(_BUILTIN))


def builtin_spec(name: str) -> DialectSpec:
    try:
        return _BUILTIN[name]
    except KeyError:
        known = ", ".join(dialect_names())
        raise DialectConfigError(f"unknown dialect {name!r}; built-in: {known}") from None


def get_dialect(name: str = DEFAULT_DIALECT) -> Dialect:
    return dialect_for(builtin_spec(name))


def dialect_for(spec: DialectSpec) -> Dialect:
    """The dialect `spec` describes: its family's class, with the parser it names."""
    parser = get_parser(spec.parser, PARSERS)
    return _DIALECT_TYPES.get(spec.parser, Dialect)(spec, parser)


def load_dialect(path: str | Path) -> Dialect:
    """A built-in dialect (the file's `base`, default DEFAULT_DIALECT) with the file's
    fields."""
    path = Path(path)
    data = _read(path)
    base_name = data.pop("base", DEFAULT_DIALECT)
    if not isinstance(base_name, str):
        raise DialectConfigError(f"{path}: base must be a dialect name")
    base = builtin_spec(base_name).model_dump(mode="json")
    try:
        spec = DialectSpec.model_validate(_merge(base, data))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise DialectConfigError(f"{path}: {problems}") from None
    return dialect_for(spec)


def _read(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DialectConfigError(f"cannot read dialect file {path}: {exc}") from exc
    try:
        if path.suffix.lower() == ".toml":
            data: Any = tomllib.loads(raw.decode("utf-8"))
        else:
            data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DialectConfigError(f"{path} is not valid {path.suffix or 'JSON'}: {exc}") from exc
    if not isinstance(data, dict):
        raise DialectConfigError(f"{path}: the top level must be a table/object")
    return data


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged
