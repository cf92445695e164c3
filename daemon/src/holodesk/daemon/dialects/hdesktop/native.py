"""`hdesktop-tools`: H Company's desktop tools as native function tools.

H Company's own desktop CLI serves its models with vLLM's `--enable-auto-tool-choice
--tool-call-parser ...`: the same twelve tools as the `hdesktop` dialect, called
natively instead of written as a `tool_call` inside a JSON step. Nothing of the
tools is copied here: the function specs are the vocabulary's tool schemas (less
their `tool_name` discriminator, which becomes the function's name), a call is
executed by the vocabulary's readers, an earlier step is rendered back by
render.py, and the action space (forms, examples, gaps) is the vocabulary's
with the answer written as a tool reply. What the model writes besides its call is
its thought; the plan of update_plan rides in the note (plan.py) and comes
back as that call's output.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from holodesk.daemon.actions import ActionKind
from holodesk.daemon.dialects.action_space import ActionForm, ActionSpace
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.hdesktop import render as hdesktop_render
from holodesk.daemon.dialects.hdesktop.plan import plan_lines, split_plan, with_plan
from holodesk.daemon.dialects.hdesktop.vocabulary import (
    hdesktop_action_space,
    tool_effect,
    tool_schemas,
)
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.tool_dialect import CallEffect, FunctionTool, ToolFamily
from holodesk.daemon.dialects.tool_prompt import RenderedCall
from holodesk.daemon.engines.base import ToolCall
from holodesk.daemon.engines.tool_reply import reply_text

NAME = "hdesktop_tools"


def tools(spec: DialectSpec) -> tuple[FunctionTool, ...]:
    """The vocabulary's tools, each as a function: its properties less tool_name."""
    found: list[FunctionTool] = []
    for schema in tool_schemas(spec.coordinates, spec.key_aliases):
        props = dict(schema["properties"])
        name = props.pop("tool_name")["const"]
        parameters = {
            "type": "object",
            "properties": props,
            "required": [r for r in schema["required"] if r != "tool_name"],
            "additionalProperties": False,
        }
        found.append(FunctionTool(name, schema["description"], parameters))
    return tuple(found)


def effect(
    name: str, arguments: Mapping[str, Any], spec: DialectSpec, geometry: ImageGeometry
) -> CallEffect:
    done = tool_effect({**arguments, "tool_name": name}, spec, geometry)
    note = with_plan("", done.plan) if done.plan is not None else ""
    return CallEffect(done.actions, note)


def call_of(
    actions: Sequence[ActionKind], note: str, geometry: ImageGeometry | None
) -> RenderedCall | None:
    plan = split_plan(note)[1] if not actions else None
    call = hdesktop_render.tool_call(actions, geometry, plan)
    if call is None:
        return None
    arguments = {k: v for k, v in call.items() if k != "tool_name"}
    return RenderedCall(str(call["tool_name"]), arguments, plan_lines(plan) if plan else "ok")


def _write(form: ActionForm, args: Mapping[str, Any], thought: str) -> str:
    """A whole answer: the tool reply of one call (what every engine returns)."""
    call = ToolCall(form.name, json.dumps(dict(args), ensure_ascii=False), "call_1")
    return reply_text(thought or f"Next: {form.name}.", [call])


def action_space(spec: DialectSpec) -> ActionSpace:
    """The vocabulary's (its forms, gaps and signatures), answered as a tool call."""
    space = hdesktop_action_space(spec)
    return replace(
        space,
        write=_write,
        answer_format=(
            "One native tool call per step (the request's tools; vLLM's tool-call parser "
            "or the server's tool_calls), one of the twelve hdesktop tools; what the model "
            "writes besides the call is its thought. x and y are integers in [0, 1000]."
        ),
        notes=(
            'Each earlier step comes back as its call, and its result as a tool turn ("ok", '
            'the plan for update_plan, or "error: ..."); older screenshots are dropped.',
            "Keys: the contract's names, or pyautogui's (esc, cmd, win, pgdn, shiftleft...).",
        ),
    )


# The family (tool_dialect.ToolFamily) of H Company's desktop tools, native.
FAMILY = ToolFamily(NAME, tools, effect, call_of, action_space)
