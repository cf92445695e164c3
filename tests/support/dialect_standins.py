"""Stand-in models that answer in one dialect's format, for `model check --dialect auto`.

Each is an `Answer` for tests/support/openai_server.py: whatever the prompt (a
model answers in the format it was trained on, whichever dialect asks), it
clicks the centre of the bundled screenshot's target, written in its format's
syntax and coordinate convention, for a Locate request and for a navigation
step alike. A tool-calling model answers with `tool_calls` when the request
offers tools (as vLLM's tool-call parser returns them) and with its calls' own
hermes syntax as text when it offers none. Coordinates come from the format's
own dialect (the model sees the image that dialect's resize makes), so a dialect
that reads them in another convention parses the answer and misses the target.

FORMATS maps a parser (the registry's `DialectSpec.parser`) to the answer
writer; a dialect whose parser has none here cannot be stood in for, and the
tests say so by name rather than skip it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.geometry import Point
from holodesk.daemon.model_check.screenshot import Screenshot, bundled_screenshot
from tests.support.openai_server import Answer, ToolAnswer


@dataclass(frozen=True)
class Format:
    """One format's answers for a click at a point: to a Locate request, to a step
    that offers tools (None: the format has no tools, it answers `step` as text), and
    to a step that does not (a tool model then writes its calls' own syntax as text)."""

    locate: str
    step: str
    with_tools: ToolAnswer | None = None


# A point in the model's space -> that format's answers.
Writer = Callable[[float, float], Format]


def _holo(x: float, y: float) -> Format:
    action = {"action": "click_element", "element": "Submit", "x": x, "y": y}
    step = {"note": "", "thought": "Submit the form.", "action": action}
    return Format(json.dumps({"x": x, "y": y}), json.dumps(step))


def _uitars(x: float, y: float) -> Format:
    box = f"<|box_start|>({round(x)},{round(y)})<|box_end|>"
    return Format(
        f"Action: click(start_box='{box}')",
        f"Thought: The Submit button sends the form.\nAction: click(start_box='{box}')",
    )


def _hdesktop(x: float, y: float) -> Format:
    call = {
        "tool_name": "click_desktop",
        "element": "Submit",
        "x": round(x),
        "y": round(y),
        "button": "left",
    }
    step = {"note": None, "thought": "Submit the form.", "tool_call": call}
    return Format(json.dumps({"x": round(x), "y": round(y)}), json.dumps(step))


def _tool_call(name: str, arguments: dict[str, Any], locate: str) -> Format:
    """A tool model: hermes syntax as text without tools, `tool_calls` with them."""
    text = json.dumps({"name": name, "arguments": arguments})
    return Format(
        locate,
        f"<tool_call>{text}</tool_call>",
        ToolAnswer(((name, json.dumps(arguments)),), "The Submit button sends the form."),
    )


def _hdesktop_tools(x: float, y: float) -> Format:
    arguments = {"element": "Submit", "x": round(x), "y": round(y), "button": "left"}
    return _tool_call("click_desktop", arguments, json.dumps({"x": round(x), "y": round(y)}))


def _nemotron_tools(x: float, y: float) -> Format:
    point = [round(x, 4), round(y, 4)]
    arguments = {"actions": [{"action": "left_click", "coordinate": point}]}
    return _tool_call("computer", arguments, json.dumps({"coordinate": point}))


FORMATS: Mapping[str, Writer] = {
    "holo_json": _holo,
    "uitars": _uitars,
    "hdesktop_json": _hdesktop,
    "hdesktop_tools": _hdesktop_tools,
    "nemotron_tools": _nemotron_tools,
}


def target_in_model_space(dialect: str, shot: Screenshot) -> Point:
    """The target's centre as a model of `dialect`'s format writes it."""
    box = shot.target
    centre = Point(box.x + box.width / 2, box.y + box.height / 2)
    return get_dialect(dialect).geometry(shot.size).to_model(centre)


def answering_in(dialect: str, shot: Screenshot | None = None) -> Answer:
    """An Answer that speaks `dialect`'s format (see the module's docstring)."""
    shot = shot or bundled_screenshot()
    parser = get_dialect(dialect).spec.parser
    writer = FORMATS.get(parser)
    if writer is None:
        raise LookupError(
            f"no stand-in answers in the {parser!r} format of dialect {dialect!r}: "
            "add a writer to tests/support/dialect_standins.py FORMATS"
        )
    point = target_in_model_space(dialect, shot)
    answers = writer(point.x, point.y)

    def answer(body: dict[str, Any], headers: Mapping[str, str]) -> str | ToolAnswer:
        if shot.task not in json.dumps(body):
            return answers.locate
        if body.get("tools") and answers.with_tools is not None:
            return answers.with_tools
        return answers.step

    return answer


def garbage(body: dict[str, Any], headers: Mapping[str, str]) -> str:
    """A model that answers in no format at all."""
    return "I am sorry, I cannot see any screen here. Lorem ipsum dolor sit amet."
