"""Builds chat messages from a dialect's templates (the data) and a step context."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from holodesk.daemon.actions import HistoryStep, describe
from holodesk.daemon.dialects.coords import CoordinateConvention, ImageGeometry
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.engines.base import ChatMessage, ContentPart, ImagePart, TextPart
from holodesk.daemon.geometry import Point
from holodesk.daemon.policies.base import StepContext

# A bad answer echoed back in a repair turn is cut to this many characters.
_ECHO_LIMIT = 4000


def step_messages(
    spec: DialectSpec,
    context: StepContext,
    images: tuple[ImagePart, ...],
    schema: dict[str, Any] | None,
) -> tuple[ChatMessage, ...]:
    """System turn + one user turn: task, earlier steps, the last K screenshots."""
    current = images[-1]
    p = spec.prompts
    system = p.system.format(
        output_schema=json.dumps(schema) if schema else "",
        coordinate_rule=spec.coordinate_rule(current.width, current.height),
        image_width=current.width,
        image_height=current.height,
    )
    parts: list[ContentPart] = [TextPart(p.task.format(task=context.task))]
    shown = context.history[-spec.history_steps :] if spec.history_steps else ()
    if shown:
        parts.append(TextPart(p.history_header))
        parts.extend(TextPart(_history_line(spec, step)) for step in shown)
    for step, image in zip(context.frame_steps(), images, strict=True):
        parts.append(TextPart(p.observation_open.format(step=step)))
        parts.append(image)
        parts.append(TextPart(p.observation_close.format(step=step)))
    if context.user_reply:
        parts.append(TextPart(p.user_reply.format(reply=context.user_reply)))
    if p.instruction:
        parts.append(TextPart(p.instruction.format(step=context.step)))
    messages: list[ChatMessage] = []
    if system:
        messages.append(ChatMessage("system", (TextPart(system),)))
    messages.append(ChatMessage("user", tuple(_merge_text(parts))))
    return tuple(messages)


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


def _history_line(spec: DialectSpec, step: HistoryStep) -> str:
    point_text = None
    if step.frame_size is not None:
        geometry = ImageGeometry.for_frame(step.frame_size, spec.resize.rule(), spec.coordinates)
        point_text = _model_point_text(geometry)
    actions = "; ".join(describe(a.kind, point_text) for a in step.actions) or "no action"
    if step.results:
        results = "; ".join(
            r.status.value + (f" ({r.error})" if r.error else "") for r in step.results
        )
    else:
        results = "no result"
    return spec.prompts.history_step.format(
        step=step.step, thought=step.thought, note=step.note, actions=actions, results=results
    )


def _model_point_text(geometry: ImageGeometry) -> Callable[[Point], str]:
    """Earlier actions are shown in the model's own coordinates, as it gave them."""

    digits = 3 if geometry.convention is CoordinateConvention.UNIT else 0

    def show(point: Point) -> str:
        model = geometry.to_model(point)
        return f"({model.x:.{digits}f}, {model.y:.{digits}f})"

    return show


def _merge_text(parts: list[ContentPart]) -> list[ContentPart]:
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
    return merged
