"""The `hdesktop` dialect: H Company's desktop agent format.

Where it comes from: H Company's public desktop agent harness (the one that drives
Holo and Holotron checkpoints on a desktop). A step is one JSON object
``{"note": str | null, "thought": str, "tool_call": {"tool_name": ..., ...}}``,
exactly one tool call, enforced by structured decoding (hdesktop_schema). x and y
are integers in [0, 1000] across the screenshot. The conversation wraps each
screenshot in ``<observation>``, answers each tool call with
``<tool_output tool="NAME">`` (or ``<error tool="NAME">``), keeps only the last few
screenshots as images and puts only the parsed step back into the history
(hdesktop_prompt). The prompt wording is holodesk's own.

Tools and the contract actions they become (hdesktop_tools; hdesktop_render is
the inverse, for the history):

    update_plan(goals)                     no action; the plan rides in the note
                                           (hdesktop_plan) and stays in view
    write_desktop(content, press_enter,    [ctrl+a, delete if overwrite] type_text
                  overwrite)               [enter if press_enter]; no click first
    click_desktop(element, x, y, button)   click, button left/right/middle
    double_click_desktop(element, x, y)    click count 2
    move_to_desktop(element, x, y)         move
    drag_to_desktop(element, x, y)         mouse_down (left, where the pointer is),
                                           mouse_up (left, at x, y)
    scroll_desktop(element, x, y,          scroll at x, y: dy = +/-scroll_size (down/up)
                   direction, scroll_size) or dx (right/left), 1-100 notches
    key_down_desktop(key) / key_up_desktop key_down / key_up
    hotkey_desktop(keys, repeat_count)     key_chord(keys), repeat_count times (1-20)
    hold_and_tap_key_desktop(hold_keys,    key_down each held key, key_chord of each
                             tap_keys)     tapped key in order, key_up in reverse
    answer(content)                        done(answer)

Keys: the contract's names plus pyautogui's ("esc", "cmd", "win", "pgdn", "shiftleft"
...) through `key_aliases`.

What the format has no word for (hdesktop_space.GAPS, for tests and docs): a triple
click; the back and forward buttons; modifiers held for one click or drag (said as
key_down_desktop, the click, key_up_desktop over three steps); a lone mouse down or
up, or a drag with another button, more points, held modifiers or a duration (the
drag is a left press at the pointer, a release at x, y); a scroll on both axes or
past 100 notches; typing after a click in one step (click, then write_desktop);
wait (update_plan is a step that does nothing), fail and ask_user (only answer
ends a task); navigate (hotkey ctrl+l, then write_desktop with press_enter).

The image rule and frames are Holotron-12B's (Nemotron-VL 512 px tiles), so that
`--dialect hdesktop` is a candidate format for the daemon's default model; for a
Holo2 checkpoint, a dialect file with ``base = "hdesktop"`` sets Holo2's
``[resize]`` (see holo.py). Everything but the parsing code is a `DialectSpec`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from holodesk.daemon.actions import ActionKind, Click
from holodesk.daemon.dialects import hdesktop_prompt, hdesktop_render, hdesktop_schema
from holodesk.daemon.dialects.action_space import ActionSpace
from holodesk.daemon.dialects.base import DialectParseError, LocatedTarget, OutputParser, ParsedStep
from holodesk.daemon.dialects.coords import CoordinateConvention, ImageGeometry
from holodesk.daemon.dialects.dialect import Dialect
from holodesk.daemon.dialects.hdesktop_plan import Goal, with_plan
from holodesk.daemon.dialects.hdesktop_space import hdesktop_action_space
from holodesk.daemon.dialects.hdesktop_tools import tool_effect
from holodesk.daemon.dialects.holo import HOLOTRON
from holodesk.daemon.dialects.jsontext import extract_object
from holodesk.daemon.dialects.spec import DialectSpec, PromptTemplates
from holodesk.daemon.dialects.values import KEY_ALIASES, MODIFIER_KEYS, model_point, text
from holodesk.daemon.engines.base import ChatMessage, ImagePart
from holodesk.daemon.steps import StepContext

_HINT = 'Answer {"note": ..., "thought": ..., "tool_call": {"tool_name": <tool>, ...}}.'


class HDesktopParser:
    name = "hdesktop_json"

    def parse_step(self, text: str, spec: DialectSpec, geometry: ImageGeometry) -> ParsedStep:
        obj = extract_object(text)
        if "tool_call" not in obj:
            raise DialectParseError("the answer has no tool_call", _HINT)
        if isinstance(obj["tool_call"], list):
            raise DialectParseError("tool_call is a list", "Give exactly one tool call per step.")
        effect = tool_effect(obj["tool_call"], spec, geometry)
        note = _soft_text(obj, "note")
        if effect.plan is not None:
            note = with_plan(note, effect.plan)
        return ParsedStep(actions=effect.actions, thought=_soft_text(obj, "thought"), note=note)

    def parse_location(
        self, text: str, spec: DialectSpec, geometry: ImageGeometry
    ) -> LocatedTarget:
        obj = extract_object(text)
        if "x" in obj or "y" in obj:
            return LocatedTarget(model_point(obj.get("x"), obj.get("y"), geometry))
        step = self.parse_step(text, spec, geometry)
        for action in step.actions:
            if isinstance(action, Click):
                return LocatedTarget(action.point)
        raise DialectParseError("the answer has no click position", 'Answer {"x": .., "y": ..}.')

    def step_schema(self, spec: DialectSpec) -> dict[str, Any] | None:
        return hdesktop_schema.step_schema(spec.coordinates, spec.key_aliases)

    def action_space(self, spec: DialectSpec) -> ActionSpace:
        """The tools as data (hdesktop_space): the prompt's tool list, docs and gaps."""
        return hdesktop_action_space(spec)

    def location_schema(self, spec: DialectSpec) -> dict[str, Any] | None:
        return hdesktop_schema.location_schema(spec.coordinates)

    def render_actions(
        self, actions: Sequence[ActionKind], spec: DialectSpec, geometry: ImageGeometry | None
    ) -> str:
        """The tool call as JSON (the plan of an update_plan step is in its note,
        which this does not see: see hdesktop_prompt.step_json)."""
        call = hdesktop_render.tool_call(actions, geometry, None)
        if call is None:
            return hdesktop_render.fallback_text(actions)
        return json.dumps(call, ensure_ascii=False, separators=(",", ":"))


class HDesktopDialect(Dialect):
    """A dialect whose conversation is the harness's (hdesktop_prompt), not the
    template layout: tool outputs, image placeholders and memory have no template."""

    def __init__(self, spec: DialectSpec, parser: OutputParser | None = None) -> None:
        # Its parser lives here, not in parsers.py (which this module's Dialect imports).
        super().__init__(spec, parser if parser is not None else HDesktopParser())

    def step_messages(
        self, context: StepContext, images: tuple[ImagePart, ...]
    ) -> tuple[ChatMessage, ...]:
        schema = self.parser.step_schema(self.spec)
        return hdesktop_prompt.step_messages(
            self.spec, context, images, schema, _call, self.action_list()
        )


def _call(
    actions: Sequence[ActionKind], geometry: ImageGeometry | None, plan: tuple[Goal, ...] | None
) -> dict[str, Any]:
    call = hdesktop_render.tool_call(actions, geometry, plan)
    if call is None:  # actions of no tool (a foreign history): said plainly
        return {"tool_name": "desktop", "description": hdesktop_render.fallback_text(actions)}
    return call


def _soft_text(obj: dict[str, Any], name: str) -> str:
    """note and thought are never worth a retry (note may be null): keep what is usable."""
    try:
        return text(obj, name, required=False)
    except DialectParseError:
        return ""


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

HDESKTOP = DialectSpec(
    name="hdesktop",
    description="H Company desktop agent format: JSON {note, thought, tool_call}, one of "
    "12 *_desktop/update_plan/answer tools, integers 0-1000, tool outputs in tags; "
    "no triple click, side buttons, wait, fail or ask_user (see hdesktop.py)",
    parser=HDesktopParser.name,
    coordinates=CoordinateConvention.NORMALIZED_1000,
    resize=HOLOTRON.resize,
    model_image_encoding=HOLOTRON.model_image_encoding,
    frame=HOLOTRON.frame,
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
    scroll_notches=hdesktop_schema.DEFAULT_SCROLL,
    # Notes and thoughts run long in this format.
    max_tokens=2048,
)
