"""The built-in tool-calling dialects (tool_dialect.py) as data: `nemotron-tools`
(NVIDIA's computer-use harness, nemotron_tools.py) and `hdesktop-tools` (H Company's
desktop tools called natively, hdesktop_native.py).

Both read the model's images as Holotron-12B (Nemotron-VL 512 px tiles), so either
is a candidate format for the daemon's default model; a dialect file with
`base = "nemotron-tools"` changes the resize for another checkpoint, and
`tool_parser` names the vLLM tool-call parser its chat template's call syntax needs
(hermes by default: <tool_call>{"name", "arguments"}</tool_call>; a
Nemotron-3 checkpoint's template writes qwen3_coder's XML, for instance). Over the
OpenAI API the server's own `--tool-call-parser` reads the calls instead.
"""

from __future__ import annotations

from holodesk.daemon.dialects.coords import CoordinateConvention
from holodesk.daemon.dialects.hdesktop import HDESKTOP_COORDINATE_RULES, HDESKTOP_KEY_ALIASES
from holodesk.daemon.dialects.hdesktop_native import NAME as HDESKTOP_TOOLS_PARSER
from holodesk.daemon.dialects.hdesktop_schema import DEFAULT_SCROLL
from holodesk.daemon.dialects.holo import HOLOTRON
from holodesk.daemon.dialects.nemotron_tools import NAME as NEMOTRON_TOOLS_PARSER
from holodesk.daemon.dialects.spec import DialectSpec, PromptTemplates
from holodesk.daemon.dialects.values import KEY_ALIASES

_RULES = """\
Each step shows the screen now. Only the last few screenshots stay: write down in \
your text what you will need later. Call exactly one tool per step; its result \
comes back as the tool's output ("ok", or "error: ..." when it did not work). \
Before the call, say in a sentence or two what you see and what you do next. If an \
action failed before, do something else."""

NEMOTRON_SYSTEM_PROMPT = f"""\
You are a computer-use agent working on a live desktop through its screen, one step \
at a time, to complete the user's task.

{_RULES}

Tools (computer takes a list of actions and runs them in order):
{{action_list}}
Keys are named {{key_names}}.
{{coordinate_rule}}
Use terminate only once the task is verifiably done, or cannot be done.
"""

HDESKTOP_TOOLS_SYSTEM_PROMPT = f"""\
You are a computer-use agent working on a live desktop through its screen, one step \
at a time, to complete the user's task.

{_RULES}

Tools:
{{action_list}}
Keys are named {{key_names}}.
Put the pointer with move_to_desktop before drag_to_desktop; click a field before \
write_desktop when it has no focus; release every key you press with key_down_desktop. \
Plan early with update_plan for any task of more than a few steps. Use answer only \
once the task is verifiably done.
In element, describe the target so it cannot be mistaken.
{{coordinate_rule}}
"""

_UNIT_RULE = (
    "Coordinates are [x, y] fractions 0-1 of the screenshot's width and height: [0, 0] "
    "is its top-left corner, [1, 1] its bottom-right one."
)

_PROMPTS = PromptTemplates(
    task="Task: {task}",
    repair="Your previous answer could not be used: {error}. {hint}",
    locate=(
        "Locate this element on the screenshot and answer its position as one JSON object "
        '{{"coordinate": [x, y]}}. {coordinate_rule}\nElement: {description}'
    ),
    user_reply="\n{reply}",
)

NEMOTRON_TOOLS = DialectSpec(
    name="nemotron-tools",
    description="NVIDIA's computer-use harness format for Nemotron-family checkpoints as "
    "native tool calls: navigate, computer (a list of actions), tabs_create, tabs_focus, "
    "terminate; [x, y] in 0-1; no side buttons, held keys or ask_user (nemotron_tools.py)",
    parser=NEMOTRON_TOOLS_PARSER,
    coordinates=CoordinateConvention.UNIT,
    resize=HOLOTRON.resize,
    model_image_encoding=HOLOTRON.model_image_encoding,
    frame=HOLOTRON.frame,
    history_images=3,
    history_steps=32,
    history_style="turns",
    history_layout="append",
    prompts=_PROMPTS.model_copy(update={"system": NEMOTRON_SYSTEM_PROMPT}),
    coordinate_rules={CoordinateConvention.UNIT: _UNIT_RULE},
    key_aliases=KEY_ALIASES,
    scroll_notches=3,
)

HDESKTOP_TOOLS = DialectSpec(
    name="hdesktop-tools",
    description="H Company's desktop tools (the hdesktop dialect's twelve) as native tool "
    "calls, as its CLI serves them with vLLM's --tool-call-parser; integers 0-1000 "
    "(hdesktop_native.py)",
    parser=HDESKTOP_TOOLS_PARSER,
    coordinates=CoordinateConvention.NORMALIZED_1000,
    resize=HOLOTRON.resize,
    model_image_encoding=HOLOTRON.model_image_encoding,
    frame=HOLOTRON.frame,
    history_images=3,
    history_steps=64,
    history_style="turns",
    history_layout="append",
    prompts=_PROMPTS.model_copy(
        update={
            "system": HDESKTOP_TOOLS_SYSTEM_PROMPT,
            "locate": (
                "Locate this element on the screenshot and answer its position as one JSON "
                'object {{"x": .., "y": ..}}. {coordinate_rule}\nElement: {description}'
            ),
        }
    ),
    coordinate_rules=HDESKTOP_COORDINATE_RULES,
    key_aliases=HDESKTOP_KEY_ALIASES,
    scroll_notches=DEFAULT_SCROLL,
    max_tokens=2048,
)
