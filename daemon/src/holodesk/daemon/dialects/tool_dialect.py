"""Dialects whose model calls function tools natively, rather than writing JSON in text.

Newer checkpoints are served with tool calls (`vllm serve --enable-auto-tool-choice
--tool-call-parser NAME`): the tools reach the model through its chat template's
`tools` argument, and its calls come back parsed. Here a `ToolFamily` holds one
format's tools as data (JSON-schema function specs, in one place per dialect), what
each call does (contract actions) and the inverse (the call an earlier step came
from, for the history). The rest is shared:

- the request: `ToolDialect.tool_use()` is the `ToolUse` a request carries (the
  tools as OpenAI function specs, "required" while the spec asks for structured
  output, else "auto"; the spec's vLLM tool parser for in-process engines);
- the answer: every engine answers a request with tools with a tool reply
  (engines/tool_reply.py), which `ToolCallParser` reads. Text with no call, several
  calls, an unknown tool, arguments that are not a JSON object, or arguments the
  tool refuses are each a DialectParseError with a hint, so the policy's repair
  path asks again; nothing else is raised;
- the conversation: tool_prompt.py (calls as assistant tool calls, their results
  as tool turns, older screenshots dropped).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from holodesk.daemon.actions import ActionKind, Click, Move, describe
from holodesk.daemon.dialects import tool_prompt
from holodesk.daemon.dialects.action_space import ActionSpace
from holodesk.daemon.dialects.base import (
    DialectParseError,
    LocatedTarget,
    OutputParser,
    ParsedStep,
)
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.dialect import Dialect
from holodesk.daemon.dialects.jsontext import extract_object
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.tool_prompt import CallRenderer, RenderedCall
from holodesk.daemon.dialects.values import brief, point_value
from holodesk.daemon.engines.base import ChatMessage, ImagePart, TextPart, ToolCall, ToolUse
from holodesk.daemon.engines.tool_reply import read_reply
from holodesk.daemon.steps import StepContext

# The vLLM tool parser of a dialect whose spec names none: the syntax of Hermes/Qwen
# templates (<tool_call>{"name", "arguments"}</tool_call>), the most common one.
DEFAULT_TOOL_PARSER = "hermes"


@dataclass(frozen=True)
class FunctionTool:
    """One function tool: its name, what it does, its arguments' JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]

    def spec(self) -> dict[str, Any]:
        """As OpenAI and vLLM take it; strict, so a constrained call obeys the schema."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
                "strict": True,
            },
        }


@dataclass(frozen=True)
class CallEffect:
    """What one call does: contract actions (frame pixels), and a note it sets."""

    actions: tuple[ActionKind, ...]
    note: str = ""


@dataclass(frozen=True)
class ToolFamily:
    """One format's tools, as data, and their meaning: four functions of the module
    that defines the format (nemotron/native.py, hdesktop/native.py), held as one value,
    so a new format is a module and a `ToolFamily(...)`, never another class."""

    # The parser's registry name; also the dialect's default name.
    name: str
    # The function tools a request offers.
    tools: Callable[[DialectSpec], tuple[FunctionTool, ...]]
    # (tool name, its arguments, spec, geometry) -> the call's actions;
    # DialectParseError for arguments the tool refuses.
    effect: Callable[[str, Mapping[str, Any], DialectSpec, ImageGeometry], CallEffect]
    # (actions, note, geometry) -> the call that parses to them (None: no tool does).
    call_of: CallRenderer
    action_space: Callable[[DialectSpec], ActionSpace]


class ToolCallParser:
    """Reads a tool reply into a step: one call of one of the family's tools."""

    def __init__(self, family: ToolFamily) -> None:
        self.family = family
        self.name = family.name

    def parse_step(self, text: str, spec: DialectSpec, geometry: ImageGeometry) -> ParsedStep:
        tools = {t.name for t in self.family.tools(spec)}
        hint = "Call exactly one of the tools: " + ", ".join(sorted(tools)) + "."
        try:
            reply = read_reply(text)
        except ValueError as exc:
            raise DialectParseError(f"the answer is not a tool reply ({exc})", hint) from None
        if not reply.calls:
            said = reply.content.strip()
            what = f"text ({brief(said)}) and no tool call" if said else "no tool call"
            raise DialectParseError(f"the answer has {what}", hint)
        if len(reply.calls) > 1:
            names = ", ".join(c.name for c in reply.calls)
            raise DialectParseError(
                f"{len(reply.calls)} tool calls in one answer ({names})",
                "Call exactly one tool per step; the next step may call another.",
            )
        call = reply.calls[0]
        if call.name not in tools:
            raise DialectParseError(f"unknown tool {brief(call.name)}", hint)
        effect = self.family.effect(call.name, arguments(call), spec, geometry)
        return ParsedStep(effect.actions, thought=reply.content.strip(), note=effect.note)

    def parse_location(
        self, text: str, spec: DialectSpec, geometry: ImageGeometry
    ) -> LocatedTarget:
        """A locate request carries no tools: its answer is a point, as {"x", "y"} or
        {"coordinate": [x, y]}, or a tool reply whose call points somewhere."""
        try:
            read_reply(text)
        except ValueError:
            obj = extract_object(text)
            if "coordinate" in obj:
                return LocatedTarget(point_value(obj["coordinate"], geometry, "coordinate"))
            return LocatedTarget(point_value(obj, geometry, "the answer"))
        for action in self.parse_step(text, spec, geometry).actions:
            if isinstance(action, Click | Move):
                return LocatedTarget(action.point)
        raise DialectParseError("the answer points nowhere", 'Answer {"coordinate": [x, y]}.')

    def step_schema(self, spec: DialectSpec) -> dict[str, Any] | None:
        # The tools are the constraint (ToolUse), not a JSON schema for the text.
        return None

    def location_schema(self, spec: DialectSpec) -> dict[str, Any] | None:
        return None

    def action_space(self, spec: DialectSpec) -> ActionSpace:
        return self.family.action_space(spec)

    def render_actions(
        self, actions: Sequence[ActionKind], spec: DialectSpec, geometry: ImageGeometry | None
    ) -> str:
        call = self.family.call_of(actions, "", geometry)
        if call is None:
            return "; ".join(describe(a) for a in actions)
        return json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)


def arguments(call: ToolCall) -> dict[str, Any]:
    """The call's arguments as an object; DialectParseError for anything else."""
    hint = f"Give {call.name}'s arguments as one JSON object that follows its schema."
    if not call.arguments.strip():
        return {}
    try:
        value = json.loads(call.arguments)
    except ValueError as exc:
        raise DialectParseError(f"{call.name}'s arguments are not JSON: {exc}", hint) from None
    if not isinstance(value, dict):
        raise DialectParseError(f"{call.name}'s arguments are {brief(value)}, not an object", hint)
    return value


class ToolDialect(Dialect):
    """A dialect of a `ToolFamily`: its requests carry the tools, its conversation is
    tool_prompt's."""

    def __init__(self, spec: DialectSpec, parser: OutputParser) -> None:
        if not isinstance(parser, ToolCallParser):
            raise TypeError(f"dialect {spec.name}: parser {spec.parser!r} reads no tool calls")
        super().__init__(spec, parser)
        self.family = parser.family
        self.tools = self.family.tools(spec)
        self._tool_specs = tuple(t.spec() for t in self.tools)

    def tool_use(self) -> ToolUse:
        """The tools every step's request offers; forced ("required") while the spec
        asks for structured output, so a model held to it always calls one."""
        return ToolUse(
            self._tool_specs,
            choice="required" if self.spec.structured_output else "auto",
            parser=self.spec.tool_parser or DEFAULT_TOOL_PARSER,
        )

    def step_messages(
        self, context: StepContext, images: tuple[ImagePart, ...]
    ) -> tuple[ChatMessage, ...]:
        return tool_prompt.step_messages(
            self.spec, context, images, self._call_of, self.action_list()
        )

    def repair_messages(
        self, messages: tuple[ChatMessage, ...], bad_output: str, error: DialectParseError
    ) -> tuple[ChatMessage, ...]:
        """The unusable answer as the model's turn (its text, and its calls where it made
        any, each answered by the error), then the repair request."""
        repair = self.spec.prompts.repair.format(error=error.message, hint=error.hint)
        try:
            reply = read_reply(bad_output)
        except ValueError:
            said = ChatMessage("assistant", (TextPart(bad_output),))
            return (*messages, said, ChatMessage("user", (TextPart(repair),)))
        calls = tuple(
            ToolCall(c.name, c.arguments, c.id or f"call_repair_{i}")
            for i, c in enumerate(reply.calls)
        )
        turns = [ChatMessage("assistant", (TextPart(reply.content),), tool_calls=calls)]
        turns += [ChatMessage("tool", (TextPart(repair),), tool_call_id=c.id) for c in calls]
        if not calls:
            turns.append(ChatMessage("user", (TextPart(repair),)))
        return (*messages, *turns)

    def _call_of(
        self, actions: Sequence[ActionKind], note: str, geometry: ImageGeometry | None
    ) -> RenderedCall | None:
        return self.family.call_of(actions, note, geometry)
