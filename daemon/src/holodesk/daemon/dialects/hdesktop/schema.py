"""The JSON schema of an `hdesktop` step, for structured decoding, and each tool's
parameters (the words of vocabulary.py name theirs; the names are said there).

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

from collections.abc import Callable, Mapping
from typing import Any

from holodesk.daemon.dialects.coords import CoordinateConvention
from holodesk.daemon.dialects.values import key_names

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


# What a tool's function schema says, less its name: (description, properties, required).
Parameters = tuple[str, dict[str, Any], tuple[str, ...]]
# (the dialect's coordinate convention, its key aliases) -> a tool's parameters; each
# word of the vocabulary (vocabulary.py) names its own.
ParameterMaker = Callable[[CoordinateConvention, Mapping[str, str]], Parameters]


def tool(name: str, parameters: Parameters) -> dict[str, Any]:
    """One tool's object schema: its tool_name const, then its parameters."""
    description, props, required = parameters
    return _tool(name, description, props, required)


def _at(convention: CoordinateConvention) -> dict[str, Any]:
    return {
        "element": _ELEMENT,
        "x": _coordinate(convention, "x"),
        "y": _coordinate(convention, "y"),
    }


def update_plan(convention: CoordinateConvention, aliases: Mapping[str, str]) -> Parameters:
    goal = {
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "the goal, starting with a verb"},
            "status": {"type": "string", "enum": list(GOAL_STATUSES)},
        },
        "required": ["title", "status"],
        "additionalProperties": False,
    }
    return (
        "Replace the plan with this full list of goals (at most one running).",
        {"goals": {"type": "array", "items": goal, "minItems": 1, "maxItems": MAX_GOALS}},
        ("goals",),
    )


def write(convention: CoordinateConvention, aliases: Mapping[str, str]) -> Parameters:
    return (
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
    )


def click(convention: CoordinateConvention, aliases: Mapping[str, str]) -> Parameters:
    button = {"type": "string", "enum": list(BUTTONS), "default": "left"}
    return ("Click at (x, y).", {**_at(convention), "button": button}, ("element", "x", "y"))


def at_point(description: str) -> ParameterMaker:
    """double_click, move_to, drag_to: an element and its x, y, nothing else."""

    def parameters(convention: CoordinateConvention, aliases: Mapping[str, str]) -> Parameters:
        return (description, _at(convention), ("element", "x", "y"))

    return parameters


def scroll(convention: CoordinateConvention, aliases: Mapping[str, str]) -> Parameters:
    return (
        "Move the pointer to (x, y), then turn the wheel.",
        {
            **_at(convention),
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
    )


def one_key(description: str, what: str) -> ParameterMaker:
    """key_down and key_up: one key."""

    def parameters(convention: CoordinateConvention, aliases: Mapping[str, str]) -> Parameters:
        return (description, {"key": _key(aliases, what)}, ("key",))

    return parameters


def hotkey(convention: CoordinateConvention, aliases: Mapping[str, str]) -> Parameters:
    return (
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
    )


def hold_and_tap(convention: CoordinateConvention, aliases: Mapping[str, str]) -> Parameters:
    return (
        "Hold keys down while tapping others one after another.",
        {
            "hold_keys": _keys(aliases, MAX_HOLD_KEYS, "keys held down throughout"),
            "tap_keys": _keys(aliases, MAX_TAP_KEYS, "keys tapped in order"),
        },
        ("hold_keys", "tap_keys"),
    )


def answer(convention: CoordinateConvention, aliases: Mapping[str, str]) -> Parameters:
    return (
        "End the task with the final answer.",
        {"content": {"type": "string", "description": "the complete final answer"}},
        ("content",),
    )


def step_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The step {note, thought, tool_call}; `tools`: each tool's object schema."""
    return {
        "title": "HDesktopStep",
        "type": "object",
        "properties": {
            "note": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "description": "new task-relevant facts from the screen; null when none",
            },
            "thought": {"type": "string", "description": "reasoning about the next step"},
            "tool_call": {"anyOf": tools},
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
