"""The `nemotron-tools` dialect as data: NVIDIA's harness's tools read on
Holotron-12B's images (Nemotron-VL 512 px tiles), so it is a candidate format for
the daemon's default model; a dialect file with `base = "nemotron-tools"` changes
the resize for another checkpoint, and `tool_parser` names the vLLM tool-call parser
its chat template's call syntax needs (hermes by default: <tool_call>{"name",
"arguments"}</tool_call>; a Nemotron-3 checkpoint's template writes qwen3_coder's
XML, for instance). Over the OpenAI API the server's own `--tool-call-parser` reads
the calls instead.
"""

from __future__ import annotations

from holodesk.daemon.dialects.coords import CoordinateConvention
from holodesk.daemon.dialects.holo.holotron import holotron_images
from holodesk.daemon.dialects.nemotron.native import NAME
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.dialects.tool_prompt import TOOL_PROMPTS, TOOL_RULES
from holodesk.daemon.dialects.values import KEY_ALIASES

NEMOTRON_SYSTEM_PROMPT = f"""\
You are a computer-use agent working on a live desktop through its screen, one step \
at a time, to complete the user's task.

{TOOL_RULES}

Tools (computer takes a list of actions and runs them in order):
{{action_list}}
Keys are named {{key_names}}.
{{coordinate_rule}}
Use terminate only once the task is verifiably done, or cannot be done.
"""

_UNIT_RULE = (
    "Coordinates are [x, y] fractions 0-1 of the screenshot's width and height: [0, 0] "
    "is its top-left corner, [1, 1] its bottom-right one."
)

# A DialectSpec as every family writes one: alike in its fields, not in their values.
NEMOTRON_TOOLS = DialectSpec(
    name="nemotron-tools",
    description="NVIDIA's computer-use harness format for Nemotron-family checkpoints as "
    "native tool calls: navigate, computer (a list of actions), tabs_create, tabs_focus, "
    "terminate; [x, y] in 0-1; no side buttons, held keys or ask_user (dialects/nemotron)",
    parser=NAME,
    coordinates=CoordinateConvention.UNIT,
    **holotron_images(),
    history_images=3,
    history_steps=32,
    history_style="turns",
    history_layout="append",
    prompts=TOOL_PROMPTS.model_copy(update={"system": NEMOTRON_SYSTEM_PROMPT}),
    coordinate_rules={CoordinateConvention.UNIT: _UNIT_RULE},
    key_aliases=KEY_ALIASES,
    scroll_notches=3,
)
