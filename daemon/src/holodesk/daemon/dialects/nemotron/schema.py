"""The `nemotron-tools` family's schemas: each computer action's properties and each
tool's parameters (the words of vocabulary.py name theirs; the names are said
there), and the bounds the readers, the rendering and the action space share.

Apart from those because the specs are what the model is shown: changing one is a
change of the prompt, which the readers then have to follow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from holodesk.daemon.actions import KeyChord
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.values import key_names

DIRECTIONS = {"down": (0, 1), "up": (0, -1), "right": (1, 0), "left": (-1, 0)}
MAX_ACTIONS = 10
MAX_SCROLL = 100
MAX_KEYS = 5
MAX_TAB = 9
HISTORY = {"back": KeyChord(("alt", "left")), "forward": KeyChord(("alt", "right"))}
NEW_TAB = KeyChord(("ctrl", "t"))

# spec -> a computer action's properties besides "action", or a tool's parameters.
Properties = Callable[[DialectSpec], dict[str, Any]]


def _coordinate(what: str) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "number", "minimum": 0, "maximum": 1},
        "minItems": 2,
        "maxItems": 2,
        "description": f"{what}: [x, y], fractions 0-1 of the screenshot's width and height",
    }


def object_(
    props: dict[str, Any], required: Sequence[str], description: str = ""
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "object",
        "properties": props,
        "required": list(required),
        "additionalProperties": False,
    }
    if description:
        body["description"] = description
    return body


def action(name: str, props: dict[str, Any], description: str) -> dict[str, Any]:
    """One computer action's schema: its "action" const, then its properties."""
    return object_(
        {"action": {"type": "string", "const": name}, **props},
        ["action", *props],
        description,
    )


# --- the computer actions' properties ------------------------------------------------------


def at(spec: DialectSpec) -> dict[str, Any]:
    return {"coordinate": _coordinate("where")}


def drag(spec: DialectSpec) -> dict[str, Any]:
    return {"start_coordinate": _coordinate("where the drag starts"), **at(spec)}


def type_text(spec: DialectSpec) -> dict[str, Any]:
    return {"text": {"type": "string"}}


def key_press(spec: DialectSpec) -> dict[str, Any]:
    key = {
        "anyOf": [
            {"type": "string", "enum": key_names(spec.key_aliases)},
            {"type": "string", "minLength": 1, "maxLength": 1},
        ]
    }
    return {"keys": {"type": "array", "items": key, "minItems": 1, "maxItems": MAX_KEYS}}


def scroll(spec: DialectSpec) -> dict[str, Any]:
    parameters = object_(
        {
            "scroll_direction": {"type": "string", "enum": list(DIRECTIONS)},
            "scroll_amount": {"type": "integer", "minimum": 1, "maximum": MAX_SCROLL},
        },
        ["scroll_direction", "scroll_amount"],
        "which way, and how many wheel notches",
    )
    return {**at(spec), "scroll_parameters": parameters}


def wait(spec: DialectSpec) -> dict[str, Any]:
    return {"duration": {"type": "number", "minimum": 0, "maximum": spec.max_wait_s}}


# --- the tools' parameters ---------------------------------------------------------------

_URL = {"type": "string", "minLength": 1}


def navigate(spec: DialectSpec) -> dict[str, Any]:
    return object_({"url": {**_URL, "description": 'a URL, "back" or "forward"'}}, ["url"])


def computer(actions: list[dict[str, Any]]) -> dict[str, Any]:
    """`actions`: each computer action's schema."""
    items = {"type": "array", "items": {"anyOf": actions}, "minItems": 1, "maxItems": MAX_ACTIONS}
    return object_({"actions": items}, ["actions"])


def tabs_create(spec: DialectSpec) -> dict[str, Any]:
    return object_({"url": {"type": "string"}}, ["url"])


def tabs_focus(spec: DialectSpec) -> dict[str, Any]:
    return object_({"tab_id": {"type": "integer", "minimum": 1, "maximum": MAX_TAB}}, ["tab_id"])


def terminate(spec: DialectSpec) -> dict[str, Any]:
    return object_(
        {
            "status": {"type": "string", "enum": ["success", "failure"]},
            "answer": {"type": "string"},
        },
        ["status", "answer"],
    )
