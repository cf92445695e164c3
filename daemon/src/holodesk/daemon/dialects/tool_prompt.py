"""The conversation of a tool-calling dialect (tool_dialect.py):

    system      the rules, the coordinate rule, the tools in words ({action_list});
                the tools themselves travel as the request's `tools`
    user        the task
    per earlier step, oldest first:
      user      its screenshot, while it is among the last few (older ones dropped)
      assistant what the model wrote besides the call (its thought, and its note),
                and the call: ToolCall(name, arguments, id "call_<step>")
      tool      the call's result (tool_call_id "call_<step>"): "ok", the tool's own
                output, or the failures
    user        the screen now

Only the parsed step goes back (the call rebuilt from the session's actions, never
the raw output), and the screenshots leave in blocks as the spec's append layout
says (`first_image_step`), so each prompt begins with the previous one's between
drops and a prefix cache reuses it. Results go back as tool turns, text only:
OpenAI's API takes no image in a tool message, so each screenshot is a user turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from holodesk.daemon.actions import ActionKind, ActionStatus, HistoryStep, describe
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.prompt import shown_images, step_geometry, system_text, task_text
from holodesk.daemon.dialects.spec import DialectSpec, PromptTemplates
from holodesk.daemon.engines.base import ChatMessage, ContentPart, ImagePart, TextPart, ToolCall
from holodesk.daemon.steps import StepContext

# What every tool-calling dialect's system prompt says of the turns (a family's own
# prompt puts it in with {TOOL_RULES}).
TOOL_RULES = """\
Each step shows the screen now. Only the last few screenshots stay: write down in \
your text what you will need later. Call exactly one tool per step; its result \
comes back as the tool's output ("ok", or "error: ..." when it did not work). \
Before the call, say in a sentence or two what you see and what you do next. If an \
action failed before, do something else."""


# The tool-calling dialects' templates, but for the system prompt each family writes.
TOOL_PROMPTS = PromptTemplates(
    task="Task: {task}",
    repair="Your previous answer could not be used: {error}. {hint}",
    locate=(
        "Locate this element on the screenshot and answer its position as one JSON object "
        '{{"coordinate": [x, y]}}. {coordinate_rule}\nElement: {description}'
    ),
    user_reply="\n{reply}",
)


@dataclass(frozen=True)
class RenderedCall:
    """An earlier step as the call it came from (arguments in model coordinates), and
    what its tool turn reports when the step's actions ran cleanly."""

    name: str
    arguments: Mapping[str, Any]
    output: str = "ok"


# (actions, the step's note, its geometry) -> the call they came from, if any.
CallRenderer = Callable[[Sequence[ActionKind], str, ImageGeometry | None], RenderedCall | None]


def step_messages(
    spec: DialectSpec,
    context: StepContext,
    images: tuple[ImagePart, ...],
    render: CallRenderer,
    action_list: str,
) -> tuple[ChatMessage, ...]:
    current = images[-1]
    # No schema: the tools are the constraint.
    system = system_text(spec, current, None, action_list)
    messages: list[ChatMessage] = []
    if system:
        messages.append(_text("system", system))
    messages.append(_text("user", task_text(spec, context, action_list)))
    first = spec.first_history_step(context.step)
    by_step = shown_images(spec, context, images)
    history = {h.step: h for h in context.history if first <= h.step < context.step}
    for number in sorted((set(history) | set(by_step)) - {context.step}):
        if number in by_step:
            messages.append(_observation(spec, number, by_step[number], ""))
        step = history.get(number)
        if step is not None:
            messages.extend(step_turns(spec, step, render))
    messages.append(
        _observation(spec, context.step, current, context.user_reply, context.operator_note)
    )
    return tuple(messages)


def step_turns(spec: DialectSpec, step: HistoryStep, render: CallRenderer) -> list[ChatMessage]:
    """An earlier step: the model's turn with its call, then the call's result."""
    kinds = [a.kind for a in step.actions]
    said = step.thought + (f"\nNote: {step.note}" if step.note else "")
    call = render(kinds, step.note, step_geometry(spec, step))
    if call is None:  # actions no tool stands for (another policy's): said plainly
        done = "; ".join(describe(k) for k in kinds) or "nothing"
        return [_text("assistant", f"{said}\n(did: {done})".strip())]
    call_id = f"call_{step.step}"
    arguments = json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))
    turn = ChatMessage(
        "assistant", (TextPart(said),), tool_calls=(ToolCall(call.name, arguments, call_id),)
    )
    result = ChatMessage("tool", (TextPart(result_text(step, call)),), tool_call_id=call_id)
    return [turn, result]


def result_text(step: HistoryStep, call: RenderedCall) -> str:
    if step.actions and not step.results:
        return "error: not executed"
    failed = [r for r in step.results if r.status is not ActionStatus.OK]
    if not failed:
        return call.output
    return "error: " + "; ".join(
        r.status.value + (f": {r.error}" if r.error else "") for r in failed
    )


def _observation(
    spec: DialectSpec, step: int, image: ImagePart, reply: str, note: str = ""
) -> ChatMessage:
    p = spec.prompts
    parts: list[ContentPart] = []
    opening = p.observation_open.format(step=step)
    if opening:
        parts.append(TextPart(opening))
    parts.append(image)
    closing = p.observation_close.format(step=step)
    if reply:
        closing += p.user_reply.format(reply=reply)
    if note:  # the person who took the desktop over, handing it back (the live view)
        closing += "\n" + p.operator_note.format(note=note)
    if closing:
        parts.append(TextPart(closing))
    return ChatMessage("user", tuple(parts))


def _text(role: Literal["system", "user", "assistant"], text: str) -> ChatMessage:
    return ChatMessage(role, (TextPart(text),))
