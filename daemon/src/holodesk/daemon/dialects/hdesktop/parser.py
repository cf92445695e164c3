"""The `hdesktop` parser and dialect: a JSON step {note, thought, tool_call} read with
the vocabulary's readers (vocabulary.py), and the conversation laid out as the
harness does (prompt.py). The family is described in __init__.py."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from holodesk.daemon.actions import ActionKind, Click
from holodesk.daemon.dialects.action_space import ActionSpace
from holodesk.daemon.dialects.base import DialectParseError, LocatedTarget, OutputParser, ParsedStep
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.dialect import Dialect
from holodesk.daemon.dialects.hdesktop import prompt as hdesktop_prompt
from holodesk.daemon.dialects.hdesktop import render as hdesktop_render
from holodesk.daemon.dialects.hdesktop import schema as hdesktop_schema
from holodesk.daemon.dialects.hdesktop.plan import Goal, with_plan
from holodesk.daemon.dialects.hdesktop.vocabulary import (
    hdesktop_action_space,
    tool_effect,
    tool_schemas,
)
from holodesk.daemon.dialects.jsontext import extract_object
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.values import model_point, text
from holodesk.daemon.engines.base import ChatMessage, ImagePart
from holodesk.daemon.steps import StepContext

_HINT = 'Answer {"note": ..., "thought": ..., "tool_call": {"tool_name": <tool>, ...}}.'


class HDesktopParser:
    name = "hdesktop_json"

    def parse_step(self, text: str, spec: DialectSpec, geometry: ImageGeometry) -> ParsedStep:
        obj = extract_object(text)
        if "tool_call" not in obj:
            raise DialectParseError("the answer has no tool_call", _HINT)
        if isinstance(obj["tool_call"], list):
            raise DialectParseError("tool_call is a list", "Give exactly one tool call per step.")
        effect = tool_effect(obj["tool_call"], spec, geometry)
        note = _soft_text(obj, "note")
        if effect.plan is not None:
            note = with_plan(note, effect.plan)
        return ParsedStep(actions=effect.actions, thought=_soft_text(obj, "thought"), note=note)

    def parse_location(
        self, text: str, spec: DialectSpec, geometry: ImageGeometry
    ) -> LocatedTarget:
        obj = extract_object(text)
        if "x" in obj or "y" in obj:
            return LocatedTarget(model_point(obj.get("x"), obj.get("y"), geometry))
        step = self.parse_step(text, spec, geometry)
        for action in step.actions:
            if isinstance(action, Click):
                return LocatedTarget(action.point)
        raise DialectParseError("the answer has no click position", 'Answer {"x": .., "y": ..}.')

    def step_schema(self, spec: DialectSpec) -> dict[str, Any] | None:
        return hdesktop_schema.step_schema(tool_schemas(spec.coordinates, spec.key_aliases))

    def action_space(self, spec: DialectSpec) -> ActionSpace:
        """The tools as data (vocabulary.py): the prompt's tool list, docs and gaps."""
        return hdesktop_action_space(spec)

    def location_schema(self, spec: DialectSpec) -> dict[str, Any] | None:
        return hdesktop_schema.location_schema(spec.coordinates)

    def render_actions(
        self, actions: Sequence[ActionKind], spec: DialectSpec, geometry: ImageGeometry | None
    ) -> str:
        """The tool call as JSON (the plan of an update_plan step is in its note,
        which this does not see: see prompt.step_json)."""
        call = hdesktop_render.tool_call(actions, geometry, None)
        if call is None:
            return hdesktop_render.fallback_text(actions)
        return json.dumps(call, ensure_ascii=False, separators=(",", ":"))


class HDesktopDialect(Dialect):
    """A dialect whose conversation is the harness's (prompt.py), not the
    template layout: tool outputs, image placeholders and memory have no template."""

    def __init__(self, spec: DialectSpec, parser: OutputParser | None = None) -> None:
        # One format: the harness's own parser unless told otherwise.
        super().__init__(spec, parser if parser is not None else HDesktopParser())

    def step_messages(
        self, context: StepContext, images: tuple[ImagePart, ...]
    ) -> tuple[ChatMessage, ...]:
        schema = self.parser.step_schema(self.spec)
        return hdesktop_prompt.step_messages(
            self.spec, context, images, schema, _call, self.action_list()
        )


def _call(
    actions: Sequence[ActionKind], geometry: ImageGeometry | None, plan: tuple[Goal, ...] | None
) -> dict[str, Any]:
    call = hdesktop_render.tool_call(actions, geometry, plan)
    if call is None:  # actions of no tool (a foreign history): said plainly
        return {"tool_name": "desktop", "description": hdesktop_render.fallback_text(actions)}
    return call


def _soft_text(obj: dict[str, Any], name: str) -> str:
    """note and thought are never worth a retry (note may be null): keep what is usable."""
    try:
        return text(obj, name, required=False)
    except DialectParseError:
        return ""
