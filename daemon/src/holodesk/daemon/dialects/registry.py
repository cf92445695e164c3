"""Built-in dialects by name, and dialects loaded from JSON or TOML files.

Built-in: holotron (the default), holo, holo1.5, uitars, uitars1.0, hdesktop, and
the tool-calling nemotron-tools and hdesktop-tools (tool_dialect.py).

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

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from holodesk.daemon.dialects.base import OutputParser
from holodesk.daemon.dialects.dialect import Dialect
from holodesk.daemon.dialects.hdesktop import (
    HDESKTOP,
    HDESKTOP_TOOLS,
    NATIVE,
    HDesktopDialect,
    HDesktopParser,
)
from holodesk.daemon.dialects.holo import HOLO, HOLO_1_5, HOLOTRON
from holodesk.daemon.dialects.nemotron import NATIVE as NEMOTRON_NATIVE
from holodesk.daemon.dialects.nemotron import NEMOTRON_TOOLS
from holodesk.daemon.dialects.parsers import TEMPLATE_PARSERS, DialectConfigError, get_parser
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.tool_dialect import ToolCallParser, ToolDialect
from holodesk.daemon.dialects.uitars import UITARS, UITARS_1_0

# Made once at import and read-only: a dialect of another family comes from a file
# (load_dialect) or a new entry here.
_BUILTIN: Mapping[str, DialectSpec] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            HOLOTRON,
            HOLO,
            HOLO_1_5,
            UITARS,
            UITARS_1_0,
            HDESKTOP,
            NEMOTRON_TOOLS,
            HDESKTOP_TOOLS,
        )
    }
)
_TOOL_PARSERS = (ToolCallParser(NEMOTRON_NATIVE), ToolCallParser(NATIVE))
# Every output parser a dialect may name: the template dialects' and those built in code.
PARSERS: Mapping[str, OutputParser] = MappingProxyType(
    {
        **TEMPLATE_PARSERS,
        HDesktopParser.name: HDesktopParser(),
        **{parser.name: parser for parser in _TOOL_PARSERS},
    }
)
# Dialects whose conversation is built in code rather than from templates, by parser
# (a file based on one keeps its layout).
_DIALECT_TYPES: dict[str, type[Dialect]] = {
    HDesktopParser.name: HDesktopDialect,
    **{parser.name: ToolDialect for parser in _TOOL_PARSERS},
}
# The default model is Holotron-12B; its format is a guess to check on a GPU host.
DEFAULT_DIALECT = HOLOTRON.name


def dialect_names() -> tuple[str, ...]:
    return tuple(sorted(_BUILTIN))


def builtin_spec(name: str) -> DialectSpec:
    try:
        return _BUILTIN[name]
    except KeyError:
        known = ", ".join(dialect_names())
        raise DialectConfigError(f"unknown dialect {name!r}; built-in: {known}") from None


def get_dialect(name: str = DEFAULT_DIALECT) -> Dialect:
    return _dialect(builtin_spec(name))


def _dialect(spec: DialectSpec) -> Dialect:
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
    return _dialect(spec)


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
