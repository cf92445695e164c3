"""The JSON schema of the Holo answer format, drawn from its vocabulary's forms
(vocabulary.py) by the shared form_schema.py, for structured decoding; parsing is
lenient and lives in parser.py.

Coordinates follow the dialect's convention (pixels are bounded per step, by
`Dialect.step_schema`, from the image the model sees).
"""

from __future__ import annotations

from typing import Any

from holodesk.daemon.dialects.action_space import ActionSpace
from holodesk.daemon.dialects.coords import CoordinateConvention
from holodesk.daemon.dialects.form_schema import coordinates, form_variants, key_schema


def location_schema(convention: CoordinateConvention) -> dict[str, Any]:
    return {
        "title": "ClickCoordinates",
        "type": "object",
        "properties": coordinates(convention),
        "required": ["x", "y"],
        "additionalProperties": False,
    }


def step_schema(space: ActionSpace, convention: CoordinateConvention) -> dict[str, Any]:
    """The answer {note, thought, action}; a new dict each call. Pixel coordinates have
    no upper bound here: `Dialect.step_schema` adds the step's image size."""
    variants = form_variants(space, convention)
    return {
        "title": "HoloStep",
        "type": "object",
        "properties": {
            "note": {
                "type": "string",
                "description": "task-relevant facts to remember; may be empty",
            },
            "thought": {
                "type": "string",
                "description": "reasoning about the next step, a few lines",
            },
            "action": {"anyOf": variants},
        },
        "required": ["thought", "action"],
        "additionalProperties": False,
        "$defs": {"key": key_schema()},
    }
