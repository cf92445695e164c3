"""The `uitars` and `uitars1.0` dialects as data: our wording of UI-TARS's
computer-use prompt, its coordinate and image rules (see __init__.py)."""

from __future__ import annotations

from holodesk.daemon.dialects.action_space import alias_table
from holodesk.daemon.dialects.coords import CoordinateConvention
from holodesk.daemon.dialects.spec import DialectSpec, FrameRequest, PromptTemplates, ResizeSpec
from holodesk.daemon.dialects.uitars.parser import UiTarsParser
from holodesk.daemon.dialects.uitars.vocabulary import WORDS
from holodesk.daemon.dialects.values import KEY_ALIASES
from holodesk.daemon.frames import ImageEncoding

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

# A DialectSpec as every family writes one: alike in its fields, not in their values.
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
    action_aliases=alias_table(WORDS),
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
