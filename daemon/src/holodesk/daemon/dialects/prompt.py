"""Builds chat messages from a dialect's templates (the data) and a step context.

Two history styles (DialectSpec.history_style), how an earlier step is written:

- ``text``: one user turn holding the task, a line per earlier step and the
  screenshots;
- ``turns``: the task in the first user turn, then each earlier step replayed
  as the model's own answer (an assistant turn), preceded by its screenshot
  while that is shown, and the screen now as the last user turn.

Two layouts (DialectSpec.history_layout), where it goes and what leaves when:

- ``append`` (the built-in dialects' default): the fixed part (system, task),
  then every step in the order it happened, each earlier step right after its
  screenshot, the screen now last. Step n+1's prompt is step n's plus what
  happened since, so a prefix cache (vLLM's) reuses all of it; screenshots
  leave the window in blocks (DialectSpec.first_image_step), the step lines
  only together with them, so one step in a block rebuilds the prompt from the
  first dropped screenshot on and every other step only appends.
- ``window`` (the original): step lines first (text) or the steps as turns,
  then the last `history_images` screenshots, both sliding by one per step:
  every step changes the prompt right after the task.

Either way the prompt stops growing: about `history_steps` earlier steps and
`history_images` screenshots on average, `frames_kept` at most.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from holodesk.daemon.actions import ActionKind, HistoryStep
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.values import key_names_text
from holodesk.daemon.engines.base import ChatMessage, ContentPart, ImagePart, TextPart
from holodesk.daemon.steps import StepContext

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
    action_list: str = "",
) -> tuple[ChatMessage, ...]:
    """`action_list`: the dialect's action space, a line per form ({action_list})."""
    system = system_text(spec, images[-1], schema, action_list)
    task = TextPart(task_text(spec, context, action_list))
    messages: list[ChatMessage] = []
    if system:
        messages.append(ChatMessage("system", (TextPart(system),)))
    if spec.history_layout == "append":
        messages.extend(_appended(spec, context, images, render, task))
    elif spec.history_style == "turns":
        messages.extend(_turns(spec, context, images, render, task))
    else:
        messages.append(ChatMessage("user", _single_turn(spec, context, images, render, task)))
    return tuple(messages)


# The pieces every conversation layout shares (this module's, hdesktop/prompt.py's and
# tool_prompt's): one place for each, so the layouts cannot drift apart in them.


def system_text(
    spec: DialectSpec, current: ImagePart, schema: dict[str, Any] | None, action_list: str
) -> str:
    """The spec's system template filled in for the screen now ("" for none)."""
    return spec.prompts.system.format(
        # Compact: the schema is in every prompt, and spaces are tokens.
        output_schema=json.dumps(schema, separators=(",", ":")) if schema else "",
        coordinate_rule=spec.coordinate_rule(current.width, current.height),
        image_width=current.width,
        image_height=current.height,
        action_list=action_list,
        key_names=key_names_text(),
    )


def task_text(spec: DialectSpec, context: StepContext, action_list: str) -> str:
    return spec.prompts.task.format(
        task=context.task, action_list=action_list, key_names=key_names_text()
    )


def image_steps(context: StepContext, images: tuple[ImagePart, ...]) -> tuple[int, ...]:
    """The step of each image: they are the newest frames' (all of the window, or only
    those the layout shows, when the policy makes no others)."""
    if len(images) > len(context.frames):
        raise ValueError(f"{len(images)} images for a window of {len(context.frames)} frames")
    return context.frame_steps()[len(context.frames) - len(images) :]


def shown_images(
    spec: DialectSpec, context: StepContext, images: tuple[ImagePart, ...]
) -> dict[int, ImagePart]:
    """The screenshots the append layout shows, by step (`images` are the newest
    frames'): they leave in blocks (DialectSpec.images_shown)."""
    steps = image_steps(context, images)
    shown = min(len(images), spec.images_shown(context.step))
    return dict(zip(steps[-shown:], images[-shown:], strict=True))


def step_geometry(spec: DialectSpec, step: HistoryStep) -> ImageGeometry | None:
    """The model image an earlier step was decided on, to write its actions back in
    the model's coordinates (None: the step kept no frame size)."""
    if step.frame_size is None:
        return None
    return ImageGeometry.for_frame(step.frame_size, spec.resize.rule(), spec.coordinates)


def observation_parts(spec: DialectSpec, step: int, inner: ContentPart) -> list[ContentPart]:
    """A screenshot (or what stands for one) between the spec's observation tags."""
    p = spec.prompts
    return [
        TextPart(p.observation_open.format(step=step)),
        inner,
        TextPart(p.observation_close.format(step=step)),
    ]


def merge_text(parts: Sequence[ContentPart]) -> tuple[ContentPart, ...]:
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


def _shown(spec: DialectSpec, context: StepContext) -> tuple[HistoryStep, ...]:
    return context.history[-spec.history_steps :] if spec.history_steps else ()


def _single_turn(
    spec: DialectSpec,
    context: StepContext,
    images: tuple[ImagePart, ...],
    render: ActionRenderer,
    task: TextPart,
) -> tuple[ContentPart, ...]:
    """Task, earlier steps as lines, the last K screenshots: one user turn."""
    p = spec.prompts
    parts: list[ContentPart] = [task]
    shown = _shown(spec, context)
    if shown:
        parts.append(TextPart(p.history_header))
        parts.extend(
            TextPart(p.history_step.format(**_step_fields(spec, step, render))) for step in shown
        )
    for step, image in zip(image_steps(context, images), images, strict=True):
        parts.extend(observation_parts(spec, step, image))
    parts.extend(_closing(spec, context))
    return merge_text(parts)


def _turns(
    spec: DialectSpec,
    context: StepContext,
    images: tuple[ImagePart, ...],
    render: ActionRenderer,
    task: TextPart,
) -> list[ChatMessage]:
    """The task, then earlier steps as the model's own turns, each after its
    screenshot while that is still in the window; the screen now last."""
    p = spec.prompts
    steps = image_steps(context, images)
    by_step = dict(zip(steps, images, strict=True))
    history = {h.step: h for h in _shown(spec, context)}
    earlier = sorted((set(history) | set(steps[:-1])) - {context.step})
    turns = [ChatMessage("user", merge_text([task]))]
    if history and p.history_header:
        turns.append(ChatMessage("user", (TextPart(p.history_header),)))
    for number in earlier:
        image = by_step.get(number)
        if image is not None:
            turns.append(ChatMessage("user", merge_text(observation_parts(spec, number, image))))
        step = history.get(number)
        if step is not None:
            text = p.assistant_step.format(**_step_fields(spec, step, render))
            turns.append(ChatMessage("assistant", (TextPart(text),)))
    now = [*observation_parts(spec, context.step, images[-1]), *_closing(spec, context)]
    turns.append(ChatMessage("user", merge_text(now)))
    return turns


def _appended(
    spec: DialectSpec,
    context: StepContext,
    images: tuple[ImagePart, ...],
    render: ActionRenderer,
    task: TextPart,
) -> list[ChatMessage]:
    """The task, then each earlier step in order (its screenshot while shown, then its
    line or turn), the screen now last: nothing before the newest step changes except
    when a block of screenshots leaves.

    `images` are the newest frames' (all of context.frames, or only the shown ones)."""
    p = spec.prompts
    by_step = shown_images(spec, context, images)
    first = spec.first_history_step(context.step)
    history = {h.step: h for h in context.history if first <= h.step < context.step}
    earlier = sorted((set(history) | set(by_step)) - {context.step})
    now = [*observation_parts(spec, context.step, images[-1]), *_closing(spec, context)]
    if spec.history_style == "text":
        parts: list[ContentPart] = [task]
        if earlier:
            parts.append(TextPart(p.history_header))
        for number in earlier:
            if number in by_step:
                parts.extend(observation_parts(spec, number, by_step[number]))
            if number in history:
                fields = _step_fields(spec, history[number], render)
                parts.append(TextPart(p.history_step.format(**fields)))
        return [ChatMessage("user", merge_text([*parts, *now]))]
    turns = [ChatMessage("user", merge_text([task]))]
    if earlier and p.history_header:
        turns.append(ChatMessage("user", (TextPart(p.history_header),)))
    for number in earlier:
        if number in by_step:
            turns.append(
                ChatMessage("user", merge_text(observation_parts(spec, number, by_step[number])))
            )
        if number in history:
            text = p.assistant_step.format(**_step_fields(spec, history[number], render))
            turns.append(ChatMessage("assistant", (TextPart(text),)))
    turns.append(ChatMessage("user", merge_text(now)))
    return turns


def _closing(spec: DialectSpec, context: StepContext) -> list[ContentPart]:
    p = spec.prompts
    parts: list[ContentPart] = []
    if context.user_reply:
        parts.append(TextPart(p.user_reply.format(reply=context.user_reply)))
    if context.operator_note:
        parts.append(TextPart(p.operator_note.format(note=context.operator_note)))
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
    actions = render([a.kind for a in step.actions], step_geometry(spec, step)) or "no action"
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
