"""The `nemotron-tools` family's tools as data: the five function specs the request
carries (navigate, computer, tabs_create, tabs_focus, terminate), the computer
tool's action schemas, and the names and bounds the reading (nemotron_calls), the
rendering (nemotron_render) and the action space (nemotron_space) share.

Apart from those because the specs are what the model is shown: changing one is a
change of the prompt, which the readers then have to follow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from holodesk.daemon.actions import KeyChord, MouseButton
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.tool_dialect import FunctionTool
from holodesk.daemon.dialects.values import key_names

CLICKS: dict[str, tuple[MouseButton, int]] = {
    "left_click": (MouseButton.LEFT, 1),
    "right_click": (MouseButton.RIGHT, 1),
    "middle_click": (MouseButton.MIDDLE, 1),
    "double_click": (MouseButton.LEFT, 2),
    "triple_click": (MouseButton.LEFT, 3),
}
ACTIONS = (*CLICKS, "mouse_move", "left_click_drag", "type", "key_press", "scroll", "wait")
DIRECTIONS = {"down": (0, 1), "up": (0, -1), "right": (1, 0), "left": (-1, 0)}
MAX_ACTIONS = 10
MAX_SCROLL = 100
MAX_KEYS = 5
MAX_TAB = 9
HISTORY = {"back": KeyChord(("alt", "left")), "forward": KeyChord(("alt", "right"))}
NEW_TAB = KeyChord(("ctrl", "t"))


def _coordinate(what: str) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "number", "minimum": 0, "maximum": 1},
        "minItems": 2,
        "maxItems": 2,
        "description": f"{what}: [x, y], fractions 0-1 of the screenshot's width and height",
    }


def _object(
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


def _action(name: str, props: dict[str, Any], description: str) -> dict[str, Any]:
    return _object(
        {"action": {"type": "string", "const": name}, **props},
        ["action", *props],
        description,
    )


def action_schemas(spec: DialectSpec) -> list[dict[str, Any]]:
    """One schema per computer action, in ACTIONS order."""
    at = {"coordinate": _coordinate("where")}
    key = {
        "anyOf": [
            {"type": "string", "enum": key_names(spec.key_aliases)},
            {"type": "string", "minLength": 1, "maxLength": 1},
        ]
    }
    clicks = {
        "left_click": "Click the left button at coordinate.",
        "right_click": "Click the right button at coordinate.",
        "middle_click": "Click the middle button at coordinate.",
        "double_click": "Double-click at coordinate.",
        "triple_click": "Triple-click at coordinate (selects a line or paragraph).",
    }
    scroll = _object(
        {
            "scroll_direction": {"type": "string", "enum": list(DIRECTIONS)},
            "scroll_amount": {"type": "integer", "minimum": 1, "maximum": MAX_SCROLL},
        },
        ["scroll_direction", "scroll_amount"],
        "which way, and how many wheel notches",
    )
    return [
        *(_action(name, at, what) for name, what in clicks.items()),
        _action("mouse_move", at, "Move the pointer to coordinate (hover)."),
        _action(
            "left_click_drag",
            {"start_coordinate": _coordinate("where the drag starts"), **at},
            "Press the left button at start_coordinate, move to coordinate, release.",
        ),
        _action("type", {"text": {"type": "string"}}, "Type text where the keyboard focus is."),
        _action(
            "key_press",
            {"keys": {"type": "array", "items": key, "minItems": 1, "maxItems": MAX_KEYS}},
            'Press keys together, e.g. ["ctrl", "c"], or one key, e.g. ["enter"].',
        ),
        _action(
            "scroll",
            {**at, "scroll_parameters": scroll},
            "Move the pointer to coordinate, then turn the wheel.",
        ),
        _action(
            "wait",
            {"duration": {"type": "number", "minimum": 0, "maximum": spec.max_wait_s}},
            "Wait this many seconds, then look again.",
        ),
    ]


def tools(spec: DialectSpec) -> tuple[FunctionTool, ...]:
    url = {"type": "string", "minLength": 1}
    return (
        FunctionTool(
            "navigate",
            'Open a URL in the browser, or go "back" or "forward" in its history.',
            _object({"url": {**url, "description": 'a URL, "back" or "forward"'}}, ["url"]),
        ),
        FunctionTool(
            "computer",
            "Use the mouse and keyboard: the actions run in order, then a new screenshot comes.",
            _object(
                {
                    "actions": {
                        "type": "array",
                        "items": {"anyOf": action_schemas(spec)},
                        "minItems": 1,
                        "maxItems": MAX_ACTIONS,
                    }
                },
                ["actions"],
            ),
        ),
        FunctionTool(
            "tabs_create",
            "Open a new browser tab, at url when one is given.",
            _object({"url": {"type": "string"}}, ["url"]),
        ),
        FunctionTool(
            "tabs_focus",
            f"Switch to browser tab tab_id, counted from 1 on the left ({MAX_TAB}: the last).",
            _object({"tab_id": {"type": "integer", "minimum": 1, "maximum": MAX_TAB}}, ["tab_id"]),
        ),
        FunctionTool(
            "terminate",
            "End the task: status success with the answer, or failure saying why.",
            _object(
                {
                    "status": {"type": "string", "enum": ["success", "failure"]},
                    "answer": {"type": "string"},
                },
                ["status", "answer"],
            ),
        ),
    )
