"""Builds chat messages from a dialect's templates (the data) and a step context.

Two history styles (DialectSpec.history_style):

- ``text``: a system turn and one user turn holding the task, one line per
  earlier step and the last K screenshots;
- ``turns``: the task in the first user turn, then each earlier step replayed
  as the model's own answer (an assistant turn), preceded by its screenshot
  while that is among the last K, and the screen now as the last user turn.

Either way the prompt stops growing: at most `history_steps` earlier steps and
`history_images` screenshots.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from holodesk.daemon.actions import ActionKind, HistoryStep
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.engines.base import ChatMessage, ContentPart, ImagePart, TextPart
from holodesk.daemon.policies.base import StepContext

# A bad answer echoed back in a repair turn is cut to this many characters.
_ECHO_LIMIT = 4000

# Earlier actions -> text in the model's syntax (the dialect's parser provides it).
ActionRenderer = Callable[[Sequence[ActionKind], ImageGeometry | None], str]


def step_messages(
    spec: DialectSpec,
    context: StepContext,
    images: tuple[ImagePart, ...],
    schema: dict[str, Any] | None,
    render: ActionRenderer,
) -> tuple[ChatMessage, ...]:
    current = images[-1]
    p = spec.prompts
    system = p.system.format(
        output_schema=json.dumps(schema) if schema else "",
        coordinate_rule=spec.coordinate_rule(current.width, current.height),
        image_width=current.width,
        image_height=current.height,
    )
    messages: list[ChatMessage] = []
    if system:
        messages.append(ChatMessage("system", (TextPart(system),)))
    if spec.history_style == "turns":
        messages.extend(_turns(spec, context, images, render))
    else:
        messages.append(ChatMessage("user", _single_turn(spec, context, images, render)))
    return tuple(messages)


def _shown(spec: DialectSpec, context: StepContext) -> tuple[HistoryStep, ...]:
    return context.history[-spec.history_steps :] if spec.history_steps else ()


def _single_turn(
    spec: DialectSpec,
    context: StepContext,
    images: tuple[ImagePart, ...],
    render: ActionRenderer,
) -> tuple[ContentPart, ...]:
    """Task, earlier steps as lines, the last K screenshots: one user turn."""
    p = spec.prompts
    parts: list[ContentPart] = [TextPart(p.task.format(task=context.task))]
    shown = _shown(spec, context)
    if shown:
        parts.append(TextPart(p.history_header))
        parts.extend(
            TextPart(p.history_step.format(**_step_fields(spec, step, render))) for step in shown
        )
    for step, image in zip(context.frame_steps(), images, strict=True):
        parts.extend(_observation(spec, step, image))
    parts.extend(_closing(spec, context))
    return _merge_text(parts)


def _turns(
    spec: DialectSpec,
    context: StepContext,
    images: tuple[ImagePart, ...],
    render: ActionRenderer,
) -> list[ChatMessage]:
    """The task, then earlier steps as the model's own turns, each after its
    screenshot while that is still in the window; the screen now last."""
    p = spec.prompts
    steps = context.frame_steps()
    by_step = dict(zip(steps, images, strict=True))
    history = {h.step: h for h in _shown(spec, context)}
    earlier = sorted((set(history) | set(steps[:-1])) - {context.step})
    turns = [ChatMessage("user", _merge_text([TextPart(p.task.format(task=context.task))]))]
    if history and p.history_header:
        turns.append(ChatMessage("user", (TextPart(p.history_header),)))
    for number in earlier:
        image = by_step.get(number)
        if image is not None:
            turns.append(ChatMessage("user", _merge_text(_observation(spec, number, image))))
        step = history.get(number)
        if step is not None:
            text = p.assistant_step.format(**_step_fields(spec, step, render))
            turns.append(ChatMessage("assistant", (TextPart(text),)))
    now = [*_observation(spec, context.step, images[-1]), *_closing(spec, context)]
    turns.append(ChatMessage("user", _merge_text(now)))
    return turns


def _observation(spec: DialectSpec, step: int, image: ImagePart) -> list[ContentPart]:
    p = spec.prompts
    return [
        TextPart(p.observation_open.format(step=step)),
        image,
        TextPart(p.observation_close.format(step=step)),
    ]


def _closing(spec: DialectSpec, context: StepContext) -> list[ContentPart]:
    p = spec.prompts
    parts: list[ContentPart] = []
    if context.user_reply:
        parts.append(TextPart(p.user_reply.format(reply=context.user_reply)))
    if p.instruction:
        parts.append(TextPart(p.instruction.format(step=context.step)))
    return parts


def repair_messages(
    spec: DialectSpec, messages: tuple[ChatMessage, ...], bad_output: str, error: str, hint: str
) -> tuple[ChatMessage, ...]:
    """The conversation plus the unusable answer and a request to fix it."""
    echo = bad_output[:_ECHO_LIMIT]
    request = spec.prompts.repair.format(error=error, hint=hint)
    return (
        *messages,
        ChatMessage("assistant", (TextPart(echo),)),
        ChatMessage("user", (TextPart(request),)),
    )


def locate_messages(
    spec: DialectSpec, image: ImagePart, description: str, schema: dict[str, Any] | None
) -> tuple[ChatMessage, ...]:
    text = spec.prompts.locate.format(
        description=description,
        coordinate_rule=spec.coordinate_rule(image.width, image.height),
        output_schema=json.dumps(schema) if schema else "",
    )
    return (ChatMessage("user", (image, TextPart(text))),)


def _step_fields(spec: DialectSpec, step: HistoryStep, render: ActionRenderer) -> dict[str, Any]:
    geometry = None
    if step.frame_size is not None:
        geometry = ImageGeometry.for_frame(step.frame_size, spec.resize.rule(), spec.coordinates)
    actions = render([a.kind for a in step.actions], geometry) or "no action"
    if step.results:
        results = "; ".join(
            r.status.value + (f" ({r.error})" if r.error else "") for r in step.results
        )
    else:
        results = "no result"
    return {
        "step": step.step,
        "thought": step.thought,
        "note": step.note,
        "actions": actions,
        "results": results,
    }


def _merge_text(parts: list[ContentPart]) -> tuple[ContentPart, ...]:
    """Adjacent text parts joined; empty ones dropped (templates may be empty)."""
    merged: list[ContentPart] = []
    for part in parts:
        if isinstance(part, TextPart):
            if not part.text:
                continue
            if merged and isinstance(merged[-1], TextPart):
                merged[-1] = TextPart(merged[-1].text + part.text)
                continue
        merged.append(part)
    return tuple(merged)
