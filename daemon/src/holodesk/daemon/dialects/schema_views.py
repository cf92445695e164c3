"""JSON-schema helpers a dialect applies to its parser's schema: per-step pixel bounds
for structured decoding, and the compact form a prompt shows.

Format-neutral (they walk any schema), so they live apart from any one parser.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from holodesk.daemon.dialects.coords import CoordinateConvention, ImageGeometry


def bound_pixels(schema: dict[str, Any], geometry: ImageGeometry | None) -> dict[str, Any]:
    """A copy of `schema` whose pixel coordinates (numeric properties x and y from 0,
    without a maximum) are bounded by the model's image of this step. A pixel
    schema cannot know the image size; the step can. Other conventions: a copy."""
    out = copy.deepcopy(schema)
    if geometry is None or geometry.convention is not CoordinateConvention.RESIZED_PIXELS:
        return out
    width, height = geometry.extent
    _bound(out, {"x": int(width), "y": int(height)})
    return out


def _bound(node: Any, upper: Mapping[str, int]) -> None:
    if isinstance(node, list):
        for item in node:
            _bound(item, upper)
        return
    if not isinstance(node, dict):
        return
    properties = node.get("properties")
    if isinstance(properties, dict):
        for axis, limit in upper.items():
            prop = properties.get(axis)
            if (
                isinstance(prop, dict)
                and prop.get("type") in ("integer", "number")
                and prop.get("minimum") == 0
                and "maximum" not in prop
            ):
                prop["maximum"] = limit
    for value in node.values():
        _bound(value, upper)


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as a prompt shows it: its structure without the descriptions and
    titles below the top (the prompt's action list says what each form and field
    means), so the space is stated once and the fixed prompt stays short."""

    def strip(node: Any, top: bool) -> Any:
        if isinstance(node, list):
            return [strip(item, False) for item in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if not top and key in ("description", "title"):
                continue
            if key in ("properties", "$defs") and isinstance(value, dict):
                out[key] = {name: strip(sub, False) for name, sub in value.items()}
            else:
                out[key] = strip(value, False)
        return out

    result: dict[str, Any] = strip(schema, True)
    return result
