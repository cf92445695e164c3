"""The Holo answer format's parser: a JSON step {note, thought, action} (or a list of
"actions"), and the localization answers (x/y, a box, or Holo1's "Click(x, y)"),
read with the vocabulary's readers (vocabulary.py); the family is described in
__init__.py."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from holodesk.daemon.actions import ActionKind, Click, describe, is_terminal
from holodesk.daemon.dialects.action_space import ActionSpace, readers
from holodesk.daemon.dialects.base import DialectParseError, LocatedTarget, ParsedStep
from holodesk.daemon.dialects.coords import CoordinateConvention, ImageGeometry
from holodesk.daemon.dialects.holo import schema as holo_schema
from holodesk.daemon.dialects.holo.vocabulary import WORDS, holo_action_space
from holodesk.daemon.dialects.jsontext import extract_object, strip_reasoning
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.values import box_value, brief, model_point, text
from holodesk.daemon.geometry import Box, Point

MAX_ACTIONS_PER_STEP = 16
# The parser's table, from the vocabulary.
HANDLERS = readers(WORDS)
_SCHEMA_HINT = 'Answer {"note": ..., "thought": ..., "action": {"action": <name>, ...}}.'
_CLICK_TEXT = re.compile(
    r"click\s*\(\s*([-+]?\d+(?:\.\d+)?)\s*,\s*([-+]?\d+(?:\.\d+)?)\s*\)", re.IGNORECASE
)


class HoloJsonParser:
    name = "holo_json"

    def parse_step(self, text: str, spec: DialectSpec, geometry: ImageGeometry) -> ParsedStep:
        obj = extract_object(text)
        thought = _soft_text(obj, "thought", "reasoning")
        note = _soft_text(obj, "note", "notes", "memory")
        raw_actions = _action_objects(obj)
        actions: list[ActionKind] = []
        for index, raw in enumerate(raw_actions):
            if actions and is_terminal(actions[-1]):
                raise DialectParseError(
                    f"action {index} follows a terminal action",
                    "Nothing may follow answer, fail or ask_user in one step.",
                )
            actions.extend(_convert(raw, spec, geometry))
        if not actions:
            raise DialectParseError("the answer has no action", _SCHEMA_HINT)
        return ParsedStep(actions=tuple(actions), thought=thought, note=note)

    def parse_location(
        self, text: str, spec: DialectSpec, geometry: ImageGeometry
    ) -> LocatedTarget:
        if isinstance(text, str) and len(text) < 10_000:
            match = _CLICK_TEXT.search(strip_reasoning(text))
            if match:  # Holo1/1.5 localization answers "Click(x, y)"
                return LocatedTarget(model_point(match.group(1), match.group(2), geometry))
        obj = extract_object(text)
        box = _answer_box(obj, geometry)
        if "x" in obj or "y" in obj:
            point = model_point(obj.get("x"), obj.get("y"), geometry)
            if box is not None and not box.contains(point):
                raise DialectParseError(
                    "the point lies outside the box",
                    "Give x and y inside the element's box [x1, y1, x2, y2].",
                )
            return LocatedTarget(point, box)
        if box is not None:  # a box alone: its centre is meant
            return LocatedTarget(box.center, box)
        step = self.parse_step(text, spec, geometry)
        for action in step.actions:
            if isinstance(action, Click):
                return LocatedTarget(action.point)
        raise DialectParseError("the answer has no click position", 'Answer {"x": .., "y": ..}.')

    def action_space(self, spec: DialectSpec) -> ActionSpace:
        return holo_action_space(spec)

    def step_schema(self, spec: DialectSpec) -> dict[str, Any] | None:
        return holo_schema.step_schema(self.action_space(spec), spec.coordinates)

    def location_schema(self, spec: DialectSpec) -> dict[str, Any] | None:
        return holo_schema.location_schema(spec.coordinates)

    def render_actions(
        self, actions: Sequence[ActionKind], spec: DialectSpec, geometry: ImageGeometry | None
    ) -> str:
        show = None if geometry is None else _model_point_text(geometry)
        return "; ".join(describe(action, show) for action in actions)


def _model_point_text(geometry: ImageGeometry) -> Callable[[Point], str]:
    """Earlier actions are shown in the model's own coordinates, as it gave them."""
    digits = 3 if geometry.convention is CoordinateConvention.UNIT else 0

    def show(point: Point) -> str:
        model = geometry.to_model(point)
        return f"({model.x:.{digits}f}, {model.y:.{digits}f})"

    return show


def _answer_box(obj: dict[str, Any], geometry: ImageGeometry) -> Box | None:
    """The element's box, when the answer gives one besides (or instead of) x/y."""
    for name in ("box", "bbox"):
        if obj.get(name) is not None:
            return box_value(obj[name], geometry, name)
    return None


def _soft_text(obj: dict[str, Any], *names: str) -> str:
    """Reasoning fields are optional and never worth a retry: keep what is usable."""
    try:
        return text(obj, *names, required=False)
    except DialectParseError:
        return ""


def _action_objects(obj: dict[str, Any]) -> list[Any]:
    if "action" in obj:
        action = obj["action"]
        # Flat form {"action": "click", "x": .., "y": ..} (the localization answers).
        return [obj] if isinstance(action, str) else [action]
    if "actions" in obj:
        actions = obj["actions"]
        if isinstance(actions, list) and len(actions) <= MAX_ACTIONS_PER_STEP:
            return actions
        raise DialectParseError(
            f"actions is {brief(actions)}", f"Give at most {MAX_ACTIONS_PER_STEP} actions."
        )
    raise DialectParseError("the answer has no action field", _SCHEMA_HINT)


def _convert(raw: Any, spec: DialectSpec, geometry: ImageGeometry) -> list[ActionKind]:
    if not isinstance(raw, dict):
        raise DialectParseError(f"the action is {brief(raw)}, not an object", _SCHEMA_HINT)
    name = raw.get("action", raw.get("name", raw.get("type")))
    if not isinstance(name, str):
        raise DialectParseError(f"the action name is {brief(name)}", _SCHEMA_HINT)
    key = name.strip().lower()
    canonical = spec.action_aliases.get(key, key)
    handler = HANDLERS.get(canonical)
    if handler is None:
        raise DialectParseError(
            f"unknown action {brief(name)}",
            "Use one of: " + ", ".join(holo_action_space(spec).names) + ".",
        )
    return handler(raw, spec, geometry)
