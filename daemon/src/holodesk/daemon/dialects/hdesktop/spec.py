"""The `hdesktop` and `hdesktop-tools` dialects as data: the harness's prompt (in
holodesk's words), its coordinate rules and pyautogui's key names; the image rule
and frames are Holotron-12B's (see __init__.py)."""

from __future__ import annotations

from holodesk.daemon.dialects.coords import CoordinateConvention
from holodesk.daemon.dialects.hdesktop.native import NAME as NATIVE_PARSER
from holodesk.daemon.dialects.hdesktop.parser import HDesktopParser
from holodesk.daemon.dialects.hdesktop.schema import DEFAULT_SCROLL
from holodesk.daemon.dialects.holo.holotron import holotron_images
from holodesk.daemon.dialects.spec import DialectSpec, PromptTemplates
from holodesk.daemon.dialects.tool_prompt import TOOL_PROMPTS, TOOL_RULES
from holodesk.daemon.dialects.values import KEY_ALIASES, MODIFIER_KEYS

HDESKTOP_SYSTEM_PROMPT = """\
You are a computer-use agent. You work on a live desktop through its screen, one \
step at a time, to complete the user's task.

Each step shows the screen now inside <observation>...</observation>. Only the last \
few screenshots stay; older ones become "[Image omitted by context cleaning]", so \
write down what you will need. After each tool call its result comes back as \
<tool_output tool="NAME">...</tool_output>, or as <error tool="NAME">...</error> \
when it did not work.

Answer each step with one JSON object with the keys note, thought and tool_call:
- note: facts from the screen you will need later (values, names, paths, messages). \
Screenshots are forgotten, notes are kept. Only what is new; null when nothing is.
- thought: did your last tool call work, where do you stand, which tool comes next \
and with which arguments. If an action failed before, do something else.
- tool_call: exactly one tool call, following the schema below.

Tools (call exactly one per step):
{action_list}
Keys are named {key_names}.
Put the pointer with move_to_desktop before drag_to_desktop; click a field before \
write_desktop when it has no focus; release every key you press with key_down_desktop. \
Plan early with update_plan for any task of more than a few steps and keep the \
statuses current. Use answer only once the task is verifiably done.

In element, describe the target so it cannot be mistaken: its visible text, its look, \
where it is and what is next to it.
{coordinate_rule}

<output_format>
{output_schema}
</output_format>
"""

HDESKTOP_COORDINATE_RULES: dict[CoordinateConvention, str] = {
    CoordinateConvention.NORMALIZED_1000: (
        "Coordinates x and y are integers in [0, 1000] across the screenshot: (0, 0) is "
        "its top-left corner, (1000, 1000) its bottom-right one."
    ),
    CoordinateConvention.RESIZED_PIXELS: (
        "Coordinates x and y are pixels of the screenshot, which is "
        "{image_width}x{image_height}: x from the left edge, y from the top edge."
    ),
    CoordinateConvention.UNIT: (
        "Coordinates x and y are fractions 0-1 of the screenshot's width and height."
    ),
}


def _sided(modifier: str, side: str) -> str:
    """The left/right-specific key where the vocabulary has one, else the plain one."""
    name = f"{modifier}_{side}"
    return name if name in MODIFIER_KEYS else modifier


# pyautogui's key names, which the harness executes with.
HDESKTOP_KEY_ALIASES: dict[str, str] = {
    **KEY_ALIASES,
    "shiftleft": _sided("shift", "l"),
    "shiftright": _sided("shift", "r"),
    "ctrlleft": _sided("ctrl", "l"),
    "ctrlright": _sided("ctrl", "r"),
    "altleft": _sided("alt", "l"),
    "altright": _sided("alt", "r"),
    "optionleft": _sided("alt", "l"),
    "optionright": _sided("alt", "r"),
    "winleft": _sided("meta", "l"),
    "winright": _sided("meta", "r"),
    "prtsc": "printscreen",
    "prtscr": "printscreen",
    "prntscrn": "printscreen",
    "printscrn": "printscreen",
    "apps": "menu",
}

# A DialectSpec as every family writes one: alike in its fields, not in their values.
HDESKTOP = DialectSpec(
    name="hdesktop",
    description="H Company desktop agent format: JSON {note, thought, tool_call}, one of "
    "12 *_desktop/update_plan/answer tools, integers 0-1000, tool outputs in tags; "
    "no triple click, side buttons, wait, fail or ask_user (see dialects/hdesktop)",
    parser=HDesktopParser.name,
    coordinates=CoordinateConvention.NORMALIZED_1000,
    **holotron_images(),
    # The harness keeps the last 3 screenshots; here 3 on average (windows of 2-4).
    history_images=3,
    # It keeps every step; a bounded prompt keeps about 64, notes and plan for ever.
    history_steps=64,
    history_style="turns",
    history_layout="append",
    prompts=PromptTemplates(
        system=HDESKTOP_SYSTEM_PROMPT,
        task="Task: {task}",
        # The template layout (a plain `Dialect` of this spec) replays steps as turns.
        assistant_step="{actions}",
        observation_open="<observation>\n",
        observation_close="\n</observation>",
        user_reply="\n<user_reply>\n{reply}\n</user_reply>",
        operator_note="\n<operator_note>\n{note}\n</operator_note>",
        repair=(
            "Your previous answer could not be used: {error}. {hint} Answer again with one "
            "JSON object {{note, thought, tool_call}} that follows the schema."
        ),
        locate=(
            "Locate this element on the screenshot and answer its position as one JSON "
            'object {{"x": .., "y": ..}}. {coordinate_rule}\nSchema: {output_schema}\n'
            "Element: {description}"
        ),
    ),
    coordinate_rules=HDESKTOP_COORDINATE_RULES,
    key_aliases=HDESKTOP_KEY_ALIASES,
    scroll_notches=DEFAULT_SCROLL,
    # Notes and thoughts run long in this format.
    max_tokens=2048,
)

HDESKTOP_TOOLS_SYSTEM_PROMPT = f"""\
You are a computer-use agent working on a live desktop through its screen, one step \
at a time, to complete the user's task.

{TOOL_RULES}

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


# The same tools, called natively (native.py): the conversation is the tool-calling
# one (tool_prompt.py), everything else is hdesktop's.
HDESKTOP_TOOLS = HDESKTOP.model_copy(
    update={
        "name": "hdesktop-tools",
        "description": "H Company's desktop tools (the hdesktop dialect's twelve) as native "
        "tool calls, as its CLI serves them with vLLM's --tool-call-parser; integers 0-1000 "
        "(dialects/hdesktop/native.py)",
        "parser": NATIVE_PARSER,
        "prompts": TOOL_PROMPTS.model_copy(
            update={
                "system": HDESKTOP_TOOLS_SYSTEM_PROMPT,
                "locate": (
                    "Locate this element on the screenshot and answer its position as one "
                    'JSON object {{"x": .., "y": ..}}. {coordinate_rule}\nElement: {description}'
                ),
            }
        ),
    }
)
