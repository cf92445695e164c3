"""The `holo` dialect: H Company's Holo model family (Holo1, Holo1.5, Holo2).

Where the format comes from: H Company's public cookbooks
(github.com/hcompai/hai-cookbook). A navigation step is one JSON object
``{"note": str, "thought": str, "action": {...}}`` whose action is one of
click_element (x, y, element), write_element_abs (content, x, y, element),
scroll (direction), go_back, refresh, goto (url), wait (seconds) and answer
(content). Coordinates differ by generation:

- Holo2 (Qwen3-VL based): x, y normalized to 0-1000 (dialect ``holo``);
- Holo1 / Holo1.5 (Qwen2.5-VL based): absolute pixels of the image *after* the
  processor's smart resize (dialect ``holo1.5``), which is why the resize rule
  is part of the dialect and reproduced exactly here.

The cookbooks keep the last few screenshots in the prompt and decode with the
answer's JSON schema; both are data here (history_images, structured_output).

Holotron-12B's own prompt and action format is not published. So everything
but the parsing code is a `DialectSpec` value, loadable and overridable from a
JSON/TOML file (`registry.load_dialect`), to be checked against the real
checkpoint's chat template on a GPU host.

The action space (what the prompt lists, the schema allows and the docs publish,
docs/dialects/holo.md) is one description, holo_space.py: the cookbook actions
plus desktop ones that reach the whole contract (any button, count and held
modifiers on click_element; write at the caret; scroll by an amount at a point;
mouse_down/up; move; drag along a path with button, modifiers, duration;
key_down/up; fail; ask_user). Beyond it the parser also accepts the names models
commonly use (click, type, key, hotkey as "ctrl+c", triple_click, middle_click,
drag from/to, ...): lenient reading, never a wider space.
A localization answer may give the element's box besides (or instead of) x/y:
"box" or "bbox" as [x1, y1, x2, y2] (or [[x1, y1], [x2, y2]]) in the same convention.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from holodesk.daemon.actions import ActionKind, Click, describe, is_terminal
from holodesk.daemon.dialects import holo_schema
from holodesk.daemon.dialects.action_space import ActionSpace
from holodesk.daemon.dialects.base import DialectParseError, LocatedTarget, ParsedStep
from holodesk.daemon.dialects.coords import CoordinateConvention, ImageGeometry
from holodesk.daemon.dialects.holo_actions import HANDLERS
from holodesk.daemon.dialects.holo_space import holo_action_space
from holodesk.daemon.dialects.jsontext import extract_object, strip_reasoning
from holodesk.daemon.dialects.spec import DialectSpec, FrameRequest, PromptTemplates, ResizeSpec
from holodesk.daemon.dialects.values import box_value, brief, model_point, text
from holodesk.daemon.frames import ImageEncoding
from holodesk.daemon.geometry import Box, Point

MAX_ACTIONS_PER_STEP = 16
_SCHEMA_HINT = 'Answer {"note": ..., "thought": ..., "action": {"action": <name>, ...}}.'
_CLICK_TEXT = re.compile(
    r"click\s*\(\s*([-+]?\d+(?:\.\d+)?)\s*,\s*([-+]?\d+(?:\.\d+)?)\s*\)", re.IGNORECASE
)


class HoloJsonParser:
    name = "holo_json"

    def parse_step(self, text: str, spec: DialectSpec, geometry: ImageGeometry) -> ParsedStep:
        obj = extract_object(text)
        thought = _soft_text(obj, "thought", "reasoning")
        note = _soft_text(obj, "note", "notes", "memory")
        raw_actions = _action_objects(obj)
        actions: list[ActionKind] = []
        for index, raw in enumerate(raw_actions):
            if actions and is_terminal(actions[-1]):
                raise DialectParseError(
                    f"action {index} follows a terminal action",
                    "Nothing may follow answer, fail or ask_user in one step.",
                )
            actions.extend(_convert(raw, spec, geometry))
        if not actions:
            raise DialectParseError("the answer has no action", _SCHEMA_HINT)
        return ParsedStep(actions=tuple(actions), thought=thought, note=note)

    def parse_location(
        self, text: str, spec: DialectSpec, geometry: ImageGeometry
    ) -> LocatedTarget:
        if isinstance(text, str) and len(text) < 10_000:
            match = _CLICK_TEXT.search(strip_reasoning(text))
            if match:  # Holo1/1.5 localization answers "Click(x, y)"
                return LocatedTarget(model_point(match.group(1), match.group(2), geometry))
        obj = extract_object(text)
        box = _answer_box(obj, geometry)
        if "x" in obj or "y" in obj:
            point = model_point(obj.get("x"), obj.get("y"), geometry)
            if box is not None and not box.contains(point):
                raise DialectParseError(
                    "the point lies outside the box",
                    "Give x and y inside the element's box [x1, y1, x2, y2].",
                )
            return LocatedTarget(point, box)
        if box is not None:  # a box alone: its centre is meant
            return LocatedTarget(box.center, box)
        step = self.parse_step(text, spec, geometry)
        for action in step.actions:
            if isinstance(action, Click):
                return LocatedTarget(action.point)
        raise DialectParseError("the answer has no click position", 'Answer {"x": .., "y": ..}.')

    def action_space(self, spec: DialectSpec) -> ActionSpace:
        return holo_action_space(spec)

    def step_schema(self, spec: DialectSpec) -> dict[str, Any] | None:
        return holo_schema.step_schema(self.action_space(spec), spec.coordinates)

    def location_schema(self, spec: DialectSpec) -> dict[str, Any] | None:
        return holo_schema.location_schema(spec.coordinates)

    def render_actions(
        self, actions: Sequence[ActionKind], spec: DialectSpec, geometry: ImageGeometry | None
    ) -> str:
        show = None if geometry is None else _model_point_text(geometry)
        return "; ".join(describe(action, show) for action in actions)


def _model_point_text(geometry: ImageGeometry) -> Callable[[Point], str]:
    """Earlier actions are shown in the model's own coordinates, as it gave them."""
    digits = 3 if geometry.convention is CoordinateConvention.UNIT else 0

    def show(point: Point) -> str:
        model = geometry.to_model(point)
        return f"({model.x:.{digits}f}, {model.y:.{digits}f})"

    return show


def _answer_box(obj: dict[str, Any], geometry: ImageGeometry) -> Box | None:
    """The element's box, when the answer gives one besides (or instead of) x/y."""
    for name in ("box", "bbox"):
        if obj.get(name) is not None:
            return box_value(obj[name], geometry, name)
    return None


def _soft_text(obj: dict[str, Any], *names: str) -> str:
    """Reasoning fields are optional and never worth a retry: keep what is usable."""
    try:
        return text(obj, *names, required=False)
    except DialectParseError:
        return ""


def _action_objects(obj: dict[str, Any]) -> list[Any]:
    if "action" in obj:
        action = obj["action"]
        # Flat form {"action": "click", "x": .., "y": ..} (the localization answers).
        return [obj] if isinstance(action, str) else [action]
    if "actions" in obj:
        actions = obj["actions"]
        if isinstance(actions, list) and len(actions) <= MAX_ACTIONS_PER_STEP:
            return actions
        raise DialectParseError(
            f"actions is {brief(actions)}", f"Give at most {MAX_ACTIONS_PER_STEP} actions."
        )
    raise DialectParseError("the answer has no action field", _SCHEMA_HINT)


def _convert(raw: Any, spec: DialectSpec, geometry: ImageGeometry) -> list[ActionKind]:
    if not isinstance(raw, dict):
        raise DialectParseError(f"the action is {brief(raw)}, not an object", _SCHEMA_HINT)
    name = raw.get("action", raw.get("name", raw.get("type")))
    if not isinstance(name, str):
        raise DialectParseError(f"the action name is {brief(name)}", _SCHEMA_HINT)
    key = name.strip().lower()
    canonical = spec.action_aliases.get(key, key)
    handler = HANDLERS.get(canonical)
    if handler is None:
        raise DialectParseError(
            f"unknown action {brief(name)}",
            "Use one of: " + ", ".join(holo_action_space(spec).names) + ".",
        )
    return handler(raw, spec, geometry)


HOLO_ACTION_ALIASES: dict[str, str] = {
    "click_element": "click",
    "left_click": "click",
    "tap": "click",
    "double_click_element": "double_click",
    "doubleclick": "double_click",
    "right_click_element": "right_click",
    "write_element_abs": "write",
    "write_element": "write",
    "type": "write",
    "type_text": "write",
    "input": "write",
    "key": "hotkey",
    "keys": "hotkey",
    "press": "hotkey",
    "press_key": "hotkey",
    "key_press": "hotkey",
    "hover": "move",
    "move_to": "move",
    "mouse_move": "move",
    "drag_and_drop": "drag",
    "left_click_drag": "drag",
    "sleep": "wait",
    "done": "answer",
    "finish": "answer",
    "finished": "answer",
    "give_up": "fail",
    "failed": "fail",
    "ask": "ask_user",
    "call_user": "ask_user",
    "goto_url": "goto",
    "navigate": "goto",
    "back": "go_back",
}

HOLO_KEY_ALIASES: dict[str, str] = {
    "control": "ctrl",
    "ctl": "ctrl",
    "cmd": "meta",
    "command": "meta",
    "win": "meta",
    "windows": "meta",
    "super": "meta",
    "option": "alt",
    "opt": "alt",
    "return": "enter",
    "esc": "escape",
    "del": "delete",
    "pgup": "pageup",
    "page_up": "pageup",
    "pgdn": "pagedown",
    "page_down": "pagedown",
    "arrowup": "up",
    "arrowdown": "down",
    "arrowleft": "left",
    "arrowright": "right",
    "arrow_up": "up",
    "arrow_down": "down",
    "arrow_left": "left",
    "arrow_right": "right",
    "spacebar": "space",
    "caps_lock": "capslock",
    "print_screen": "printscreen",
    "back_space": "backspace",
    "ins": "insert",
}

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
    action_aliases=HOLO_ACTION_ALIASES,
    key_aliases=HOLO_KEY_ALIASES,
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
