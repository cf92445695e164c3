"""Typed readers for values inside parsed model output.

Shared by output parsers: numbers (finite, never bool), text, keys in the
contract's vocabulary, and points checked against the model's coordinate
space and mapped to frame pixels. Errors are DialectParseError with a hint.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from holodesk.daemon.dialects.base import DialectParseError
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.geometry import Box, Point
from holodesk.values import keys as _keys

# The contract's key vocabulary (protos/holodesk/v1/action.proto) under the names the
# parsers, schemas, prompts and docs read; its one definition is holodesk.values.keys.
MODIFIER_NAMES = _keys.MODIFIERS
EDITING_KEY_NAMES = _keys.EDITING_KEYS
KEYPAD_KEY_NAMES = _keys.KEYPAD_KEYS
MEDIA_KEY_NAMES = _keys.MEDIA_KEYS
BROWSER_KEY_NAMES = _keys.BROWSER_KEYS
NAMED_KEY_NAMES = _keys.NAMED_KEYS
KEY_VOCABULARY = _keys.VOCABULARY
MODIFIER_KEYS = frozenset(_keys.MODIFIER_KEYS)
NAMED_KEYS = frozenset(NAMED_KEY_NAMES)


# The key spellings models commonly write for the vocabulary's keys (every family
# reads them; a family adds its own, as hdesktop does pyautogui's).
KEY_ALIASES: dict[str, str] = {
    "control": "ctrl",
    "ctl": "ctrl",
    "cmd": "meta",
    "command": "meta",
    "win": "meta",
    "windows": "meta",
    "super": "meta",
    "option": "alt",
    "opt": "alt",
    "return": "enter",
    "esc": "escape",
    "del": "delete",
    "pgup": "pageup",
    "page_up": "pageup",
    "pgdn": "pagedown",
    "page_down": "pagedown",
    "arrowup": "up",
    "arrowdown": "down",
    "arrowleft": "left",
    "arrowright": "right",
    "arrow_up": "up",
    "arrow_down": "down",
    "arrow_left": "left",
    "arrow_right": "right",
    "spacebar": "space",
    "caps_lock": "capslock",
    "print_screen": "printscreen",
    "back_space": "backspace",
    "ins": "insert",
}


def key_names_text() -> str:
    """The vocabulary in words, for prompts, hints and docs (numbered runs collapsed)."""
    groups = [
        ", ".join(MODIFIER_NAMES),
        "ctrl_l/ctrl_r (and shift, alt, meta: a side)",
        ", ".join(EDITING_KEY_NAMES),
        "f1-f24",
        "kp_0-kp_9, " + ", ".join(KEYPAD_KEY_NAMES[10:]),
        ", ".join(MEDIA_KEY_NAMES),
        ", ".join(BROWSER_KEY_NAMES),
    ]
    return ", ".join(groups) + ", or the one character a key types"


def key_names(aliases: Mapping[str, str]) -> list[str]:
    """Every multi-character key name the parser accepts (aliases whose target is
    not in the vocabulary are left out: they would not parse): a schema's key enum."""
    known = MODIFIER_KEYS | NAMED_KEYS
    return sorted(known | {alias for alias, name in aliases.items() if name in known})


def brief(value: Any) -> str:
    """A short, safe rendering of any parsed JSON value for error messages."""
    if isinstance(value, str):
        return repr(value[:40] + ("..." if len(value) > 40 else ""))
    if isinstance(value, bool | int | float) or value is None:
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return f"a JSON {'object' if isinstance(value, dict) else 'array'}"


def number(value: Any, name: str) -> float:
    if isinstance(value, bool):
        raise DialectParseError(f"{name} is a boolean, not a number", f"Give {name} as a number.")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise DialectParseError(
                f"{name} is {brief(value)}, not a number", f"Give {name} as a number."
            ) from None
    if isinstance(value, int):
        # Huge integers would overflow float(); they are out of any image anyway.
        value = float(value) if abs(value) < 1e300 else math.inf
    if not isinstance(value, float):
        raise DialectParseError(
            f"{name} is {brief(value)}, not a number", f"Give {name} as a number."
        )
    if not math.isfinite(value):
        raise DialectParseError(f"{name} is {value}", f"Give {name} as a finite number.")
    return value


def text(obj: Mapping[str, Any], *names: str, required: bool = True, default: str = "") -> str:
    for name in names:
        if name in obj and obj[name] is not None:
            value = obj[name]
            if isinstance(value, str):
                return value
            if isinstance(value, bool | int | float):
                return str(value)
            raise DialectParseError(
                f"{name} is {brief(value)}, not text", f"Give {name} as a string."
            )
    if required:
        raise DialectParseError(
            f"missing field {names[0]!r}", f"Include {names[0]!r} (a string) in the action."
        )
    return default


def model_point(x: Any, y: Any, geometry: ImageGeometry) -> Point:
    """A point given in model space, checked and mapped to frame pixels."""
    fx, fy = number(x, "x"), number(y, "y")
    if not geometry.contains_model(fx, fy):
        ex, ey = geometry.extent
        raise DialectParseError(
            f"coordinate ({fx:g}, {fy:g}) is outside the image (0..{ex:g}, 0..{ey:g})",
            f"Give x in 0..{ex:g} and y in 0..{ey:g}.",
        )
    return geometry.to_frame(Point(fx, fy))


def model_box(corners: Sequence[Any], geometry: ImageGeometry, name: str = "box") -> Box:
    """A box [x1, y1, x2, y2] given in model space, checked and mapped to frame pixels
    exactly like points (then clipped to the frame, against float drift at the edges)."""
    if len(corners) != 4:
        raise DialectParseError(
            f"{name} has {len(corners)} numbers, not 4", f"Give {name} as [x1, y1, x2, y2]."
        )
    x1, y1, x2, y2 = (number(v, name) for v in corners)
    if x2 < x1 or y2 < y1:
        raise DialectParseError(
            f"{name} ({x1:g}, {y1:g}, {x2:g}, {y2:g}) is inverted",
            f"Give {name} as [x1, y1, x2, y2] with the top-left corner first.",
        )
    first = model_point(x1, y1, geometry)
    second = model_point(x2, y2, geometry)
    return Box(first.x, first.y, second.x, second.y).clipped(geometry.frame)


def box_value(value: Any, geometry: ImageGeometry, name: str) -> Box:
    """[x1, y1, x2, y2], [[x1, y1], [x2, y2]] or {"x1": .., "y1": .., "x2": .., "y2": ..}."""
    if isinstance(value, dict) and all(k in value for k in ("x1", "y1", "x2", "y2")):
        return model_box([value["x1"], value["y1"], value["x2"], value["y2"]], geometry, name)
    if isinstance(value, list | tuple):
        if len(value) == 2 and all(isinstance(c, list | tuple) and len(c) == 2 for c in value):
            return model_box([*value[0], *value[1]], geometry, name)
        if len(value) == 4:
            return model_box(value, geometry, name)
    raise DialectParseError(
        f"{name} is {brief(value)}, not a box", f"Give {name} as [x1, y1, x2, y2]."
    )


def point_value(value: Any, geometry: ImageGeometry, name: str) -> Point:
    """[x, y] or {"x": .., "y": ..}."""
    if isinstance(value, dict):
        if "x" in value and "y" in value:
            return model_point(value["x"], value["y"], geometry)
    elif isinstance(value, list | tuple) and len(value) == 2:
        return model_point(value[0], value[1], geometry)
    raise DialectParseError(
        f"{name} is {brief(value)}, not a point",
        f'Give {name} as [x, y] or {{"x": .., "y": ..}}.',
    )


def optional_point(obj: Mapping[str, Any], geometry: ImageGeometry) -> Point | None:
    """The action's point from x/y fields or a coordinate/point/position pair, if any."""
    if "x" in obj or "y" in obj:
        if obj.get("x") is None or obj.get("y") is None:
            raise DialectParseError("a point needs both x and y", "Give both x and y.")
        return model_point(obj["x"], obj["y"], geometry)
    for name in ("coordinate", "coordinates", "point", "position"):
        if obj.get(name) is not None:
            return point_value(obj[name], geometry, name)
    return None


def required_point(obj: Mapping[str, Any], geometry: ImageGeometry) -> Point:
    point = optional_point(obj, geometry)
    if point is None:
        raise DialectParseError("the action needs a point", "Give the target as x and y.")
    return point


def key_name(raw: Any, aliases: Mapping[str, str]) -> str:
    """A key in the contract's vocabulary: a modifier, a named key or one character."""
    if not isinstance(raw, str) or not raw:
        raise DialectParseError(f"key {brief(raw)} is not a key name", _KEY_HINT)
    if raw == " ":
        return "space"
    if len(raw) == 1:
        # Models write "Ctrl+C" meaning the c key; typing capitals is `write`'s job.
        return raw.lower() if raw.isascii() and raw.isalpha() else raw
    lowered = raw.strip().lower()
    name = aliases.get(lowered, lowered)
    if name in MODIFIER_KEYS or name in NAMED_KEYS or len(name) == 1:
        return name
    raise DialectParseError(f"unknown key {brief(raw)}", _KEY_HINT)


_KEY_HINT = f"Name keys with {key_names_text()}."


def key_list(raw: Any, aliases: Mapping[str, str]) -> tuple[str, ...]:
    """Keys from a list (["ctrl", "c"]) or a chord string ("ctrl+c", "ctrl c")."""
    if isinstance(raw, str):
        stripped = raw.strip()
        if len(stripped) <= 1:
            parts = [raw] if raw else []
        else:
            sep = "+" if "+" in stripped else " "
            parts = [p.strip() for p in stripped.split(sep)]
            # "ctrl++" means ctrl and the plus key.
            if sep == "+" and stripped.endswith("++"):
                parts = [*parts[:-2], "+"]
        parts = [p for p in parts if p]
    elif isinstance(raw, list):
        parts = raw
    else:
        raise DialectParseError(f"keys is {brief(raw)}", 'Give keys as a list, e.g. ["ctrl", "c"].')
    if not parts:
        raise DialectParseError("no keys given", 'Give keys as a list, e.g. ["ctrl", "c"].')
    if len(parts) > 8:
        raise DialectParseError(f"{len(parts)} keys in one chord", "Press at most 8 keys together.")
    return tuple(key_name(p, aliases) for p in parts)
