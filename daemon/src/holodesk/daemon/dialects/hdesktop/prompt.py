"""The `hdesktop` conversation: how H Company's desktop harness lays out a step.

    system      the tools, the rules, the step schema in <output_format>
    user        Task: ...
    user        <memory> notes and plan of steps that left the window </memory>  (if any)
    per earlier step, oldest first:
      user      <observation> screenshot, or a placeholder once it left </observation>
      assistant the parsed step as JSON {note, thought, tool_call} (never raw output)
      user      <tool_output tool="NAME">...</tool_output>, or <error tool="NAME">...
    user        <observation> the screen now </observation>

The window follows the spec like every dialect's append layout (prompt.py):
screenshots leave in blocks (`first_image_step`), becoming the placeholder text
inside their <observation>, as the harness demotes them; the earlier steps leave
with them (`first_history_step`). What the harness keeps forever and a bounded
prompt cannot, the notes and the plan, is kept in the <memory> turn, which changes
only when steps leave, so each step's prompt still begins with the previous one's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from holodesk.daemon.actions import ActionKind, ActionStatus, HistoryStep
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.hdesktop.plan import Goal, plan_lines, split_plan
from holodesk.daemon.dialects.prompt import (
    merge_text,
    observation_parts,
    shown_images,
    step_geometry,
    system_text,
    task_text,
)
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.engines.base import ChatMessage, ContentPart, ImagePart, TextPart
from holodesk.daemon.steps import StepContext

# What a screenshot that left the window becomes (the harness's own words).
IMAGE_PLACEHOLDER = "[Image omitted by context cleaning]"

# (actions, that step's geometry, its plan) -> the tool call they came from.
CallRenderer = Callable[
    [Sequence[ActionKind], ImageGeometry | None, tuple[Goal, ...] | None], dict[str, Any]
]


def step_messages(
    spec: DialectSpec,
    context: StepContext,
    images: tuple[ImagePart, ...],
    schema: dict[str, Any] | None,
    render: CallRenderer,
    action_list: str = "",
) -> tuple[ChatMessage, ...]:
    """`action_list`: the tools, a line each ({action_list}, from the action space)."""
    p = spec.prompts
    current = images[-1]
    system = system_text(spec, current, schema, action_list)
    messages: list[ChatMessage] = []
    if system:
        messages.append(ChatMessage("system", (TextPart(system),)))
    messages.append(_user(TextPart(task_text(spec, context, action_list))))
    first = spec.first_history_step(context.step)
    memory = memory_text(context.history, first)
    if memory:
        messages.append(_user(TextPart(memory)))
    by_step = shown_images(spec, context, images)
    history = {h.step: h for h in context.history if first <= h.step < context.step}
    for number in sorted((set(history) | set(by_step)) - {context.step}):
        messages.append(_user(*_observation(spec, number, by_step.get(number))))
        step = history.get(number)
        if step is not None:
            messages.append(ChatMessage("assistant", (TextPart(step_json(spec, step, render)),)))
            messages.append(_user(TextPart(tool_result(step, render))))
    now = _observation(spec, context.step, current)
    if context.user_reply:
        now.append(TextPart(p.user_reply.format(reply=context.user_reply)))
    if context.operator_note:
        now.append(TextPart(p.operator_note.format(note=context.operator_note)))
    messages.append(_user(*now))
    return tuple(messages)


def step_json(spec: DialectSpec, step: HistoryStep, render: CallRenderer) -> str:
    """An earlier step as the model's parsed answer, compact like pydantic's dump."""
    note, plan = _own_note(step)
    call = render([a.kind for a in step.actions], step_geometry(spec, step), plan)
    body = {"note": note or None, "thought": step.thought, "tool_call": call}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def tool_result(step: HistoryStep, render: CallRenderer) -> str:
    """What the tool reported: nothing for a desktop tool that ran, the plan for
    update_plan, the failures (status and error) for one that did not run cleanly."""
    _, plan = _own_note(step)
    name = str(render([a.kind for a in step.actions], None, plan).get("tool_name", "desktop"))
    if not step.actions:
        output = plan_lines(plan) if plan else ""
        return f'<tool_output tool="{name}">\n{output}\n</tool_output>'
    if not step.results:
        return f'<error tool="{name}">\nnot executed\n</error>'
    failed = [r for r in step.results if r.status is not ActionStatus.OK]
    if not failed:
        return f'<tool_output tool="{name}">\n\n</tool_output>'
    lines = "\n".join(r.status.value + (f": {r.error}" if r.error else "") for r in failed)
    return f'<error tool="{name}">\n{lines}\n</error>'


def memory_text(history: Sequence[HistoryStep], first_shown: int) -> str:
    """Notes of the steps before `first_shown` and the plan, when its step is one of
    them (a later plan is in view in its own step); "" when there is nothing."""
    notes: list[str] = []
    plan: tuple[Goal, ...] | None = None
    plan_left = False
    for step in history:
        note, goals = _own_note(step)
        if goals is not None:
            plan, plan_left = goals, step.step < first_shown
        if step.step < first_shown and note.strip():
            notes.append(f"- step {step.step}: {note.strip()}")
    parts: list[str] = []
    if notes:
        parts.append("Notes from earlier steps:\n" + "\n".join(notes))
    if plan is not None and plan_left:
        parts.append("Plan:\n" + plan_lines(plan))
    return "<memory>\n" + "\n".join(parts) + "\n</memory>\n" if parts else ""


def _own_note(step: HistoryStep) -> tuple[str, tuple[Goal, ...] | None]:
    """The model's note, and the plan where the step was an update_plan (no actions)."""
    note, plan = split_plan(step.note)
    return (note, plan) if not step.actions else (step.note, None)


def _observation(spec: DialectSpec, step: int, image: ImagePart | None) -> list[ContentPart]:
    """A screenshot in its <observation>, or the harness's placeholder once it left."""
    return observation_parts(
        spec, step, image if image is not None else TextPart(IMAGE_PLACEHOLDER)
    )


def _user(*parts: ContentPart) -> ChatMessage:
    """A user turn; adjacent text joined, empty text dropped (templates may be empty)."""
    return ChatMessage("user", merge_text(parts))
