"""The JSON schema of an `hdesktop` step, for structured decoding.

One object ``{note, thought, tool_call}`` whose tool_call is exactly one of the
format's twelve tools (H Company's desktop harness enforces one tool call per
step the same way). Written as plain dicts, without ``$ref``: every structured
decoding backend (xgrammar, outlines, guidance) and schema-driven test generator
takes it as it is.

Key fields are an enum of the names the parser knows (the contract's vocabulary
plus the dialect's aliases, pyautogui's "esc", "cmd", "pgdn"...) or any single
character, so a schema-valid answer is always a parseable one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from holodesk.daemon.dialects.coords import CoordinateConvention
from holodesk.daemon.dialects.values import MODIFIER_KEYS, NAMED_KEYS

TOOL_NAMES = (
    "update_plan",
    "write_desktop",
    "click_desktop",
    "double_click_desktop",
    "move_to_desktop",
    "drag_to_desktop",
    "scroll_desktop",
    "key_down_desktop",
    "key_up_desktop",
    "hotkey_desktop",
    "hold_and_tap_key_desktop",
    "answer",
)
GOAL_STATUSES = ("todo", "running", "done", "failed")
BUTTONS = ("left", "right", "middle")
DIRECTIONS = ("up", "down", "left", "right")
MAX_GOALS = 20
MAX_SCROLL = 100
DEFAULT_SCROLL = 10
MAX_REPEAT = 20
MAX_HOTKEY_KEYS = 5
MAX_HOLD_KEYS = 3
MAX_TAP_KEYS = 5

_ELEMENT = {
    "type": "string",
    "description": "the target UI element: its visible text, look and position",
}


def key_names(aliases: Mapping[str, str]) -> list[str]:
    """Every multi-character key name the parser accepts (aliases whose target is
    not in the vocabulary are left out: they would not parse)."""
    known = MODIFIER_KEYS | NAMED_KEYS
    return sorted(known | {alias for alias, name in aliases.items() if name in known})


def _key(aliases: Mapping[str, str], description: str) -> dict[str, Any]:
    return {
        "description": description,
        "anyOf": [
            {"type": "string", "enum": key_names(aliases)},
            {"type": "string", "minLength": 1, "maxLength": 1},
        ],
    }


def _keys(aliases: Mapping[str, str], most: int, description: str) -> dict[str, Any]:
    return {
        "type": "array",
        "items": _key(aliases, "a key"),
        "minItems": 1,
        "maxItems": most,
        "description": description,
    }


def _coordinate(convention: CoordinateConvention, axis: str) -> dict[str, Any]:
    edge = "left" if axis == "x" else "top"
    if convention is CoordinateConvention.UNIT:
        return {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": f"{axis} from the {edge} edge, a fraction 0-1 of the screenshot",
        }
    prop: dict[str, Any] = {
        "type": "integer",
        "minimum": 0,
        "description": f"{axis} from the {edge} edge, an integer in [0, 1000]",
    }
    if convention is CoordinateConvention.NORMALIZED_1000:
        prop["maximum"] = 1000
    else:
        prop["description"] = f"{axis} from the {edge} edge, in pixels of the screenshot"
    return prop


def _tool(
    name: str, description: str, props: dict[str, Any], required: tuple[str, ...]
) -> dict[str, Any]:
    return {
        "type": "object",
        "description": description,
        "properties": {"tool_name": {"type": "string", "const": name}, **props},
        "required": ["tool_name", *required],
        "additionalProperties": False,
    }


def tool_schemas(
    convention: CoordinateConvention, aliases: Mapping[str, str]
) -> list[dict[str, Any]]:
    """One object schema per tool, in TOOL_NAMES order."""
    point = {"x": _coordinate(convention, "x"), "y": _coordinate(convention, "y")}
    at = {"element": _ELEMENT, **point}
    goal = {
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "the goal, starting with a verb"},
            "status": {"type": "string", "enum": list(GOAL_STATUSES)},
        },
        "required": ["title", "status"],
        "additionalProperties": False,
    }
    return [
        _tool(
            "update_plan",
            "Replace the plan with this full list of goals (at most one running).",
            {"goals": {"type": "array", "items": goal, "minItems": 1, "maxItems": MAX_GOALS}},
            ("goals",),
        ),
        _tool(
            "write_desktop",
            "Type text where the keyboard focus is (no click first).",
            {
                "content": {"type": "string", "description": "the text to type"},
                "press_enter": {"type": "boolean", "default": False},
                "overwrite": {
                    "type": "boolean",
                    "default": False,
                    "description": "select all and delete the field's text first",
                },
            },
            ("content",),
        ),
        _tool(
            "click_desktop",
            "Click at (x, y).",
            {**at, "button": {"type": "string", "enum": list(BUTTONS), "default": "left"}},
            ("element", "x", "y"),
        ),
        _tool("double_click_desktop", "Double-click at (x, y).", at, ("element", "x", "y")),
        _tool("move_to_desktop", "Move the pointer to (x, y).", at, ("element", "x", "y")),
        _tool(
            "drag_to_desktop",
            "Press the left button where the pointer is, move to (x, y), release.",
            at,
            ("element", "x", "y"),
        ),
        _tool(
            "scroll_desktop",
            "Move the pointer to (x, y), then turn the wheel.",
            {
                **at,
                "direction": {"type": "string", "enum": list(DIRECTIONS)},
                "scroll_size": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_SCROLL,
                    "default": DEFAULT_SCROLL,
                    "description": "wheel notches",
                },
            },
            ("element", "x", "y", "direction"),
        ),
        _tool(
            "key_down_desktop",
            "Press a key and keep it down (release it with key_up_desktop).",
            {"key": _key(aliases, "the key to press")},
            ("key",),
        ),
        _tool(
            "key_up_desktop",
            "Release a key pressed with key_down_desktop.",
            {"key": _key(aliases, "the key to release")},
            ("key",),
        ),
        _tool(
            "hotkey_desktop",
            "Press keys together and release them in reverse order.",
            {
                "keys": _keys(aliases, MAX_HOTKEY_KEYS, 'e.g. ["ctrl", "c"]'),
                "repeat_count": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_REPEAT,
                    "default": 1,
                },
            },
            ("keys",),
        ),
        _tool(
            "hold_and_tap_key_desktop",
            "Hold keys down while tapping others one after another.",
            {
                "hold_keys": _keys(aliases, MAX_HOLD_KEYS, "keys held down throughout"),
                "tap_keys": _keys(aliases, MAX_TAP_KEYS, "keys tapped in order"),
            },
            ("hold_keys", "tap_keys"),
        ),
        _tool(
            "answer",
            "End the task with the final answer.",
            {"content": {"type": "string", "description": "the complete final answer"}},
            ("content",),
        ),
    ]


def step_schema(convention: CoordinateConvention, aliases: Mapping[str, str]) -> dict[str, Any]:
    return {
        "title": "HDesktopStep",
        "type": "object",
        "properties": {
            "note": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "description": "new task-relevant facts from the screen; null when none",
            },
            "thought": {"type": "string", "description": "reasoning about the next step"},
            "tool_call": {"anyOf": tool_schemas(convention, aliases)},
        },
        "required": ["thought", "tool_call"],
        "additionalProperties": False,
    }


def location_schema(convention: CoordinateConvention) -> dict[str, Any]:
    return {
        "title": "HDesktopLocation",
        "type": "object",
        "properties": {"x": _coordinate(convention, "x"), "y": _coordinate(convention, "y")},
        "required": ["x", "y"],
        "additionalProperties": False,
    }
