"""The UI-TARS parser: answer text (calls.py scans it) -> the vocabulary's readers
(vocabulary.py) -> actions; a grounding answer's position, and earlier steps back as
calls (render.py). The family is described in __init__.py."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from holodesk.daemon.actions import ActionKind, is_terminal, points_of
from holodesk.daemon.dialects.action_space import ActionSpace, readers
from holodesk.daemon.dialects.base import DialectParseError, LocatedTarget, ParsedStep
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.uitars.calls import FORMAT_HINT, Answer, Call, parse_answer
from holodesk.daemon.dialects.uitars.render import point_text, render
from holodesk.daemon.dialects.uitars.vocabulary import (
    WORDS,
    Context,
    box_target,
    position_arg,
    uitars_action_space,
)
from holodesk.daemon.dialects.values import brief

_NUM = r"[-+]?\d+(?:\.\d+)?"
_PAIR = rf"\(\s*{_NUM}\s*,\s*{_NUM}\s*\)"
# A position anywhere in a grounding answer: <|box_start|>..<|box_end|>, (x1,y1),(x2,y2),
# <point>x y</point>, <bbox>..</bbox>, (x,y), [x1,y1,x2,y2] and the like. Two-corner
# forms come first: at the same start, the longer reading is the one meant.
_POSITION = re.compile(
    r"<\|box_start\|>[^<]{1,120}<\|box_end\|>"
    rf"|{_PAIR}\s*,?\s*{_PAIR}"
    rf"|<point>\s*{_NUM}\s+{_NUM}\s*</point>"
    rf"|<bbox>\s*{_NUM}(?:\s+{_NUM}){{3}}\s*</bbox>"
    rf"|[(\[]\s*{_NUM}\s*,\s*{_NUM}\s*(?:,\s*{_NUM}\s*,\s*{_NUM}\s*)?[)\]]"
)
_LOCATE_HINT = "Answer with one position, e.g. (x,y)."
# The parser's table, from the vocabulary.
HANDLERS = readers(WORDS)


class UiTarsParser:
    name = "uitars"

    def parse_step(self, text: str, spec: DialectSpec, geometry: ImageGeometry) -> ParsedStep:
        answer, converted = _converted(text, spec, geometry)
        actions = [action for _, produced in converted for action in produced]
        return ParsedStep(actions=tuple(actions), thought=answer.thought, note=answer.reflection)

    def parse_location(
        self, text: str, spec: DialectSpec, geometry: ImageGeometry
    ) -> LocatedTarget:
        try:
            _, converted = _converted(text, spec, geometry)
        except DialectParseError as exc:
            error = exc
        else:
            # The first call with a position; its start_box keeps the box, if it is one.
            for call, produced in converted:
                points = [p for action in produced for p in points_of(action)]
                if not points:
                    continue
                raw = position_arg(call)
                target = None if raw is None else box_target(raw, geometry)
                if target is not None and target.point == points[0]:
                    return target
                return LocatedTarget(points[0])
            raise DialectParseError("the answer has no position", _LOCATE_HINT)
        # Grounding answers are often just "(x,y)" or a box, with or without words.
        if isinstance(text, str) and len(text) <= 10_000:
            match = _POSITION.search(text)
            if match is not None:
                return box_target(match.group(0), geometry, "position")
        raise DialectParseError(f"no position in the answer ({error.message})", _LOCATE_HINT)

    def action_space(self, spec: DialectSpec) -> ActionSpace:
        return uitars_action_space(spec)

    def step_schema(self, spec: DialectSpec) -> dict[str, Any] | None:
        return None  # free text: nothing for structured decoding to enforce

    def location_schema(self, spec: DialectSpec) -> dict[str, Any] | None:
        return None

    def render_actions(
        self, actions: Sequence[ActionKind], spec: DialectSpec, geometry: ImageGeometry | None
    ) -> str:
        return render(actions, point_text(geometry))


def _converted(
    text: str, spec: DialectSpec, geometry: ImageGeometry
) -> tuple[Answer, list[tuple[Call, list[ActionKind]]]]:
    """The answer and each call's actions, in order; raises DialectParseError."""
    answer = parse_answer(text)
    ctx = Context(spec, geometry, answer.thought)
    converted: list[tuple[Call, list[ActionKind]]] = []
    last: ActionKind | None = None
    for index, call in enumerate(answer.calls):
        if last is not None and is_terminal(last):
            raise DialectParseError(
                f"action {index} follows a terminal action",
                "Nothing may follow finished() or call_user() in one answer.",
            )
        produced = _convert(call, ctx)
        converted.append((call, produced))
        last = produced[-1] if produced else last
    if last is None:
        raise DialectParseError("the answer has no action", FORMAT_HINT)
    return answer, converted


def _convert(call: Call, ctx: Context) -> list[ActionKind]:
    key = call.name.lower()
    canonical = ctx.spec.action_aliases.get(key, key)
    handler = HANDLERS.get(canonical)
    if handler is None:
        raise DialectParseError(
            f"unknown action {brief(call.name)}",
            "Use one of: " + ", ".join(uitars_action_space(ctx.spec).names) + ".",
        )
    return handler(call, ctx)
