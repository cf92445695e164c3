"""Dialects: how a model family is prompted and how its answers become actions.

One package per family, each holding its vocabulary (the words its parser reads,
with their readers, forms and aliases, said once), its schema, prompt, parser and
built-in dialects (specs), and ending in `FAMILY`:

- holo/: H Company's Holo JSON format: holotron (the default; Holotron-12B, a guess
  to validate on a GPU host), holo (Holo2), holo1.5 (Holo1/1.5);
- uitars/: ByteDance UI-TARS's text format: uitars (1.5), uitars1.0;
- hdesktop/: H Company's desktop agent tools: hdesktop (JSON steps), hdesktop-tools
  (native tool calls);
- nemotron/: NVIDIA's computer-use harness for Nemotron checkpoints: nemotron-tools.

The shared core is the rest of this folder: spec.py (a dialect as data), dialect.py
(a spec bound to its parser), action_space.py (forms, examples, gaps, words),
form_schema.py (a JSON schema drawn from forms), prompt.py and tool_prompt.py (the
conversation layouts), tool_dialect.py (native tool calling), coords.py and images.py
(coordinates and resize rules), values.py (typed readers, keys), jsontext.py (JSON in
model text), schema_views.py, base.py, family.py and registry.py, which names the
families (one line each). Adding a family: docs/dialects/adding-a-family.md.

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
