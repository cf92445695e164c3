"""The `uitars` dialects: ByteDance UI-TARS's text action format.

Where the format comes from: the UI-TARS paper (arXiv 2501.12326), the
bytedance/UI-TARS repository (its computer-use prompt template and
``codes/ui_tars/action_parser.py``), the UI-TARS-1.5 model card, and the
UI-TARS-desktop SDK (``@ui-tars/action-parser``). An answer is free text::

    Thought: The search box is at the top; I will type the query and submit.
    Action: type(content='weather in Paris\\n')

Several actions are separated by blank lines. The action space: click,
left_double, right_single (start_box), drag (start_box, end_box), hotkey
(key='ctrl c': lower case, space separated), type (content; a trailing \\n
means press Enter), scroll (start_box, direction), wait() (5 s), finished
(content) and call_user(). Positions are written '(x,y)',
'<|box_start|>(x,y)<|box_end|>', '<point>x y</point>' or as a box
'(x1,y1,x2,y2)' / '[x1,y1,x2,y2]' / '<|box_start|>(x1,y1),(x2,y2)<|box_end|>'
whose centre is meant (Locate also reports the box itself). Content strings use
Python escapes (\\' \\" \\n), which is how the reference parser reads them.

Two coordinate conventions, so two dialects:

- ``uitars`` (UI-TARS-1.5, Qwen2.5-VL based): absolute pixels of the image
  after the processor's smart resize (factor 28, min_pixels 100*28*28,
  max_pixels 16384*28*28). The daemon sends exactly that image, so the
  engine's own resize is the identity; keep the engine's max_pixels at least
  as large or the coordinates stop matching.
- ``uitars1.0`` (UI-TARS 1.0 / 2B-7B-72B, Qwen2-VL based; UI-TARS-desktop's
  default factor 1000): relative coordinates 0-1000, independent of resizing
  (images capped at 2700*28*28 pixels as in UI-TARS-desktop).

Differences from the reference parsers, all on the lenient side: quotes inside
a value need no escaping wherever the value's end is unambiguous; the names
agents commonly use besides the prompt's (left_single, select, hover/move_to,
press, keydown/keyup/release, mouse_down/mouse_up, the <point>/<bbox> and
point=/start_point= spellings of UI-TARS-1.5 computer use) are accepted; bare
calls without "Action:" are accepted; unknown Python escapes are kept as
written. Coordinates outside the image, unknown actions and malformed calls
are a DialectParseError whose hint a retry shows the model. ``press`` is a key
press and release (the reference emits only the key-down).

There is no JSON schema (the format is free text), so structured decoding is
off; the parser is the only validation.

The prompt follows the structure of UI-TARS's computer-use prompt (a role
line, the output format, the action space with short notes, then the user's
instruction), in our own words. As in UI-TARS agents, the conversation replays
earlier steps as the model's own Thought/Action turns, each after its
screenshot while that is shown (history_style "turns"): 5 on average, in
blocks so that each step's conversation begins with the previous one's
(history_layout "append"; "window" keeps exactly the last 5).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from holodesk.daemon.actions import ActionKind, is_terminal, points_of
from holodesk.daemon.dialects.action_space import ActionSpace
from holodesk.daemon.dialects.base import DialectParseError, LocatedTarget, ParsedStep
from holodesk.daemon.dialects.coords import CoordinateConvention, ImageGeometry
from holodesk.daemon.dialects.spec import DialectSpec, FrameRequest, PromptTemplates, ResizeSpec
from holodesk.daemon.dialects.uitars_actions import (
    HANDLERS,
    UITARS_ACTION_ALIASES,
    Context,
    box_target,
    point_text,
    position_arg,
    render,
)
from holodesk.daemon.dialects.uitars_calls import FORMAT_HINT, Answer, Call, parse_answer
from holodesk.daemon.dialects.uitars_space import uitars_action_space
from holodesk.daemon.dialects.values import KEY_ALIASES, brief
from holodesk.daemon.frames import ImageEncoding

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


# Our wording of UI-TARS's computer-use prompt structure; the action lines are the
# format itself. Literal braces would be str.format fields, so there are none.
UITARS_TASK_PROMPT = """\
You are a GUI agent that operates a computer. You get a task, the history of your \
actions and screenshots of the screen. Decide the next action that moves the task \
forward.

## Output Format
```
Thought: ...
Action: ...
```

## Action Space
{action_list}

## Note
- Write the Thought in English.
- In the Thought, make a short plan, then name the next action and its target \
element in one sentence.

## User Instruction
{task}
"""

UITARS_PROMPTS = PromptTemplates(
    system="",  # UI-TARS puts its instructions in the first user turn
    task=UITARS_TASK_PROMPT,
    history_header="",
    history_step="Thought: {thought}\nAction: {actions}\n",
    assistant_step="Thought: {thought}\nAction: {actions}",
    observation_open="",
    observation_close="",
    user_reply="The user answered: {reply}\n",
    operator_note="The user took over the desktop and handed it back saying: {note}\n",
    instruction="",
    repair=(
        "That answer could not be executed: {error}. {hint} Answer again with a Thought: "
        "line and an Action: line that uses the action space."
    ),
    locate=(
        "Give only the coordinates of one point, nothing else. Which element matches "
        "this description: {description}"
    ),
)

UITARS_COORDINATE_RULES: dict[CoordinateConvention, str] = {
    CoordinateConvention.RESIZED_PIXELS: (
        "Positions are pixels of the {image_width}x{image_height} screenshot."
    ),
    CoordinateConvention.NORMALIZED_1000: "Positions are relative, 0-1000 on each axis.",
}

# The same key spellings as Holo models use (arrowleft, return, esc, cmd ...).
UITARS_KEY_ALIASES: dict[str, str] = dict(KEY_ALIASES)

_FACTOR = 28

# UI-TARS-1.5: pixels of the smart-resized image.
UITARS = DialectSpec(
    name="uitars",
    description="ByteDance UI-TARS-1.5 text format: Thought/Action calls, pixels of the "
    "smart-resized screenshot",
    parser=UiTarsParser.name,
    coordinates=CoordinateConvention.RESIZED_PIXELS,
    resize=ResizeSpec(
        kind="smart",
        factor=_FACTOR,
        min_pixels=100 * _FACTOR * _FACTOR,
        max_pixels=16384 * _FACTOR * _FACTOR,
    ),
    model_image_encoding=ImageEncoding.PNG,
    # The screen at up to 1920 px: a 1920x1080 frame is ~2.7k image tokens, and five
    # are kept; send larger frames (a dialect file) when prefill is cheap.
    frame=FrameRequest(max_width=1920, max_height=1920, encoding=ImageEncoding.PNG),
    history_images=5,
    history_steps=20,
    history_style="turns",
    # Chronological, screenshots leaving 5 at a time (windows of 3-7, 5 on average):
    # each step's conversation begins with the previous one's, for a prefix cache.
    history_layout="append",
    prompts=UITARS_PROMPTS,
    coordinate_rules=UITARS_COORDINATE_RULES,
    action_aliases=UITARS_ACTION_ALIASES,
    key_aliases=UITARS_KEY_ALIASES,
    scroll_notches=5,
    default_wait_s=5.0,
    structured_output=False,
    max_tokens=1024,
)

# UI-TARS 1.0 and UI-TARS-desktop's default: relative 0-1000.
UITARS_1_0 = UITARS.model_copy(
    update={
        "name": "uitars1.0",
        "description": "ByteDance UI-TARS 1.0 text format: Thought/Action calls, relative "
        "coordinates 0-1000",
        "coordinates": CoordinateConvention.NORMALIZED_1000,
        "resize": ResizeSpec(
            kind="smart",
            factor=_FACTOR,
            min_pixels=100 * _FACTOR * _FACTOR,
            max_pixels=2700 * _FACTOR * _FACTOR,
        ),
    }
)
