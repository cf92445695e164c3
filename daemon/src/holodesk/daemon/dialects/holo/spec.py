"""The `holo` and `holo1.5` dialects as data: H Company's Holo prompt, coordinate
rules and image rules (see __init__.py for where the format comes from)."""

from __future__ import annotations

from holodesk.daemon.dialects.action_space import alias_table
from holodesk.daemon.dialects.coords import CoordinateConvention
from holodesk.daemon.dialects.holo.parser import HoloJsonParser
from holodesk.daemon.dialects.holo.vocabulary import WORDS
from holodesk.daemon.dialects.spec import DialectSpec, FrameRequest, PromptTemplates, ResizeSpec
from holodesk.daemon.dialects.values import KEY_ALIASES
from holodesk.daemon.frames import ImageEncoding

HOLO_SYSTEM_PROMPT = """\
You operate a computer through its screen, the way a person would, to complete a task.
Each turn you get the task, a short record of your earlier steps and the latest \
screenshots; the last screenshot shows the screen now.
Look carefully, think, then choose exactly one next action.

Guidelines:
- In "note", record facts you will need later (values, names, results); leave it empty \
when there is nothing new.
- In "thought", reason about the next step in a few lines.
- {coordinate_rule}
- To type into a field, use write_element_abs with the field's position: it clicks the \
field, then types. To type where the caret already is, use write.
- When the task is complete, use answer with the full answer. If it cannot be done, use \
fail with the reason. If only a human can continue, use ask_user with your question.

Actions (fields marked ? may be left out):
{action_list}
Keys: {key_names}.

Answer with one JSON object that follows this schema, and nothing else:
{output_schema}
"""

HOLO_PROMPTS = PromptTemplates(
    system=HOLO_SYSTEM_PROMPT,
    task="<task>\n{task}\n</task>\n",
    history_header="Earlier steps:\n",
    history_step="- step {step}: {actions} -> {results}. note: {note}\n",
    observation_open="<observation step={step}>\n<screenshot>\n",
    observation_close="\n</screenshot>\n</observation>\n",
    user_reply="<user_reply>\n{reply}\n</user_reply>\n",
    operator_note="<operator_note>\n{note}\n</operator_note>\n",
    instruction="",
    repair=(
        "Your previous answer could not be used: {error}. {hint} "
        "Answer again with one JSON object that follows the schema."
    ),
    locate=(
        "Localize an element on the GUI image according to my instructions and output a "
        "click position. {coordinate_rule}\nAnswer with one JSON object that follows this "
        "schema: {output_schema}\nYour target is: {description}"
    ),
)

HOLO_COORDINATE_RULES: dict[CoordinateConvention, str] = {
    CoordinateConvention.NORMALIZED_1000: (
        "Coordinates x and y are normalized to 0-1000 across the screenshot: (0, 0) is the "
        "top-left corner, (1000, 1000) the bottom-right one."
    ),
    CoordinateConvention.RESIZED_PIXELS: (
        "Coordinates x and y are pixels of the screenshot, which is "
        "{image_width}x{image_height}: x from the left edge, y from the top edge."
    ),
    CoordinateConvention.UNIT: (
        "Coordinates x and y are fractions 0-1 of the screenshot's width and height."
    ),
}

# A DialectSpec as every family writes one: alike in its fields, not in their values.
# Holo2 (Qwen3-VL): 16 px patches merged 2x2 -> factor 32; normalized coordinates.
HOLO = DialectSpec(
    name="holo",
    description="H Company Holo2 format: JSON {note, thought, action}, coordinates 0-1000",
    parser=HoloJsonParser.name,
    coordinates=CoordinateConvention.NORMALIZED_1000,
    resize=ResizeSpec(kind="smart", factor=32, min_pixels=32 * 32 * 4, max_pixels=1920 * 1080),
    model_image_encoding=ImageEncoding.PNG,
    frame=FrameRequest(max_width=1920, max_height=1920, encoding=ImageEncoding.PNG),
    history_images=3,
    # Chronological, screenshots leaving 3 at a time (windows of 2-4, 3 on average):
    # each step's prompt begins with the previous one's, for vLLM's prefix cache.
    history_layout="append",
    prompts=HOLO_PROMPTS,
    coordinate_rules=HOLO_COORDINATE_RULES,
    action_aliases=alias_table(WORDS),
    key_aliases=KEY_ALIASES,
)

# Holo1/1.5 (Qwen2.5-VL): 14 px patches merged 2x2 -> factor 28; pixel coordinates of
# the resized image; the cookbook's max_pixels.
HOLO_1_5 = HOLO.model_copy(
    update={
        "name": "holo1.5",
        "description": "H Company Holo1/1.5 format: JSON {note, thought, action}, "
        "absolute pixels of the resized screenshot",
        "coordinates": CoordinateConvention.RESIZED_PIXELS,
        "resize": ResizeSpec(
            kind="smart", factor=28, min_pixels=56 * 56, max_pixels=1280 * 28 * 28
        ),
    }
)
