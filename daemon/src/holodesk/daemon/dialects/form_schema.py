"""JSON schema drawn from a family's forms (action_space.ActionForm), for structured
decoding: each form one object of a union that a JSON family puts where its answer
holds the action (holo/schema.py: {note, thought, action}).

Every form becomes one object of the union, `additionalProperties`
false, so a model held to the schema writes exactly the space the prompt lists
and the parser reads (no stray field the parser would read as something else).
A form with an optional point (scroll, mouse_down, mouse_up) is two objects:
without x and y, and with both, as "both or neither" has no other widely
supported JSON-schema spelling. Keys are the contract's vocabulary as
`values` holds it, or one character.

Coordinates follow the dialect's convention (pixels are bounded per step, by
`Dialect.step_schema`, from the image the model sees).
"""

from __future__ import annotations

from typing import Any

from holodesk.daemon.dialects.action_space import ActionField, ActionForm, ActionSpace
from holodesk.daemon.dialects.coords import CoordinateConvention
from holodesk.daemon.dialects.values import KEY_VOCABULARY

_KEY_REF = {"$ref": "#/$defs/key"}
_WHERE = {
    CoordinateConvention.NORMALIZED_1000: "normalized 0-1000 across the screenshot",
    CoordinateConvention.RESIZED_PIXELS: "pixels of the screenshot",
    CoordinateConvention.UNIT: "a fraction 0-1 of the screenshot",
}


def key_schema() -> dict[str, Any]:
    """One key: a name of the contract's vocabulary, or the one character it types."""
    return {
        "description": "a key name, or the single character the key types",
        "anyOf": [
            {"type": "string", "enum": list(KEY_VOCABULARY)},
            {"type": "string", "minLength": 1, "maxLength": 1},
        ],
    }


def form_variants(
    space: ActionSpace, convention: CoordinateConvention, discriminator: str = "action"
) -> list[dict[str, Any]]:
    """The union's objects, a form (or two) each, in the space's order; `discriminator`:
    the field that holds the form's name. Keys refer to "#/$defs/key" (key_schema())."""
    return [v for form in space.forms for v in _variants(form, convention, discriminator)]


def _variants(
    form: ActionForm, convention: CoordinateConvention, discriminator: str
) -> list[dict[str, Any]]:
    optional_point = any(f.kind == "point" and not f.required for f in form.fields)
    out = [_variant(form, convention, discriminator, with_point=True)]
    if optional_point:
        out.insert(0, _variant(form, convention, discriminator, with_point=False))
    return out


def _variant(
    form: ActionForm,
    convention: CoordinateConvention,
    discriminator: str,
    *,
    with_point: bool,
) -> dict[str, Any]:
    properties: dict[str, Any] = {discriminator: {"type": "string", "const": form.name}}
    required = [discriminator]
    for f in form.fields:
        if f.kind == "point":
            if not with_point:
                continue
            properties.update(coordinates(convention))
            required += ["x", "y"]
            continue
        properties[f.name] = _value(f, convention)
        if f.required:
            required.append(f.name)
    point = next((f for f in form.fields if f.kind == "point"), None)
    at = with_point and point is not None and not point.required
    return {
        "title": form.name + (" at a point" if at else ""),
        "description": form.summary,
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _value(f: ActionField, convention: CoordinateConvention) -> dict[str, Any]:
    described = {"description": f.description}
    if f.kind == "text":
        out: dict[str, Any] = {"type": "string", **described}
        if f.pattern:  # anchored: full match for every reader of the schema
            out["pattern"] = f.pattern
        elif f.min_items:
            out["minLength"] = f.min_items
        return out
    if f.kind in ("integer", "number"):
        out = {"type": f.kind, **described}
        if f.minimum is not None:
            out["minimum"] = f.minimum
        if f.maximum is not None:
            out["maximum"] = f.maximum
        return out
    if f.kind == "choice":
        return {"type": "string", "enum": list(f.choices), **described}
    if f.kind == "key":
        return {**_KEY_REF}
    items: dict[str, Any]
    if f.kind == "keys":
        items = dict(_KEY_REF)
    elif f.kind == "modifiers":
        items = {"type": "string", "enum": list(f.choices)}
    else:  # path
        items = {
            "type": "object",
            "properties": coordinates(convention),
            "required": ["x", "y"],
            "additionalProperties": False,
        }
    out = {"type": "array", "items": items, **described}
    if f.min_items:
        out["minItems"] = f.min_items
    if f.max_items is not None:
        out["maxItems"] = f.max_items
    return out


def coordinates(convention: CoordinateConvention) -> dict[str, Any]:
    """x and y in the convention (pixels bounded per step: schema_views.bound_pixels)."""
    upper = {CoordinateConvention.NORMALIZED_1000: 1000, CoordinateConvention.UNIT: 1}.get(
        convention
    )
    kind = "number" if convention is CoordinateConvention.UNIT else "integer"
    out: dict[str, Any] = {}
    for axis, edge in (("x", "left"), ("y", "top")):
        prop: dict[str, Any] = {
            "type": kind,
            "minimum": 0,
            "description": f"{axis} from the {edge} edge, {_WHERE[convention]}",
            "title": axis.upper(),
        }
        if upper is not None:
            prop["maximum"] = upper
        out[axis] = prop
    return out
