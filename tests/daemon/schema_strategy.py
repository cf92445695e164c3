"""Hypothesis strategies for the values a JSON schema allows, the subset structured
decoding backends (xgrammar, guidance) and our dialect schemas use: type, const,
enum, anyOf, local $ref, properties / required / additionalProperties false,
string minLength / maxLength or an anchored pattern, integer and number
minimum / maximum, array items / minItems / maxItems.

Why not hypothesis-jsonschema: its last release (0.23.1) breaks on the hypothesis
this workspace pins (AttributeError: 'many' object has no attribute 'more'). A
keyword outside the subset raises, so a schema can never silently get wider than
what is generated here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema  # type: ignore[import-untyped]
from hypothesis import strategies as st

_KNOWN = {
    "type", "const", "enum", "anyOf", "$ref", "$defs", "properties", "required",
    "additionalProperties", "minLength", "maxLength", "minimum", "maximum", "items",
    "minItems", "maxItems", "title", "description", "default", "pattern",
}  # fmt: skip


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    return _strategy(schema, schema)


def validator(schema: dict[str, Any]) -> Callable[[Any], None]:
    """Validates instances against `schema`, checked once here. `jsonschema.validate`
    checks the schema itself on every call, which cost 34 of the 36 s of 300
    examples against a dialect's step schema."""
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validate: Callable[[Any], None] = cls(schema).validate
    return validate


def _strategy(node: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy[Any]:
    unknown = set(node) - _KNOWN
    if unknown:
        raise NotImplementedError(f"schema keywords {sorted(unknown)} are not generated")
    if "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/$defs/"):
            raise NotImplementedError(f"$ref {ref}")
        return _strategy(root["$defs"][ref.removeprefix("#/$defs/")], root)
    if "anyOf" in node:
        return st.one_of([_strategy(sub, root) for sub in node["anyOf"]])
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    kind = node.get("type")
    if kind == "object":
        return _object(node, root)
    if kind == "array":
        return st.lists(
            _strategy(node["items"], root),
            min_size=node.get("minItems", 0),
            max_size=node.get("maxItems", 6),
        )
    if kind == "string" and "pattern" in node:
        if "minLength" in node or "maxLength" in node:
            raise NotImplementedError("pattern with a length bound")
        return st.from_regex(node["pattern"], fullmatch=True)
    if kind == "string":
        return st.text(min_size=node.get("minLength", 0), max_size=node.get("maxLength", 40))
    if kind == "integer":
        return st.integers(_bound(node.get("minimum")), _bound(node.get("maximum")))
    if kind == "number":
        return st.floats(
            node.get("minimum"), node.get("maximum"), allow_nan=False, allow_infinity=False
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    raise NotImplementedError(f"schema node {node}")


def _bound(value: Any) -> int | None:
    return None if value is None else int(value)


def _object(node: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy[Any]:
    if node.get("additionalProperties", True) is not False:
        raise NotImplementedError("objects must say additionalProperties: false")
    properties: dict[str, Any] = node.get("properties", {})
    required = set(node.get("required", ()))
    return st.fixed_dictionaries(
        {name: _strategy(sub, root) for name, sub in properties.items() if name in required},
        optional={
            name: _strategy(sub, root) for name, sub in properties.items() if name not in required
        },
    )
