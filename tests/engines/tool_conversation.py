"""A tool-calling conversation for the tiny models: step 3 of a session whose step 1
was a click (its result "ok" follows as a tool turn) and step 2 a failed one, three
512x512 screenshots, every turn kind of tool_prompt's layout (system, task, user
screenshots, assistant turns with tool calls, tool turns).

The system prompt is cut to one line (the tiny tokenizer spends about a token per
character), and `short_tools` caps the tools' free strings and lists, only so that
a random model's constrained calls end within a few hundred tokens on 2 cores.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from holodesk.daemon.actions import Action, ActionResult, ActionStatus, Click, HistoryStep
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.dialects.tool_dialect import ToolDialect
from holodesk.daemon.engines.base import ChatMessage, ToolUse
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Point, Size
from holodesk.daemon.steps import StepContext
from tests.engines.hdesktop_conversation import short_strings
from tests.engines.support import png

FRAME = Size(512, 512)
TOOL_DIALECTS = ("nemotron-tools", "hdesktop-tools")


class ShortToolDialect(ToolDialect):
    """The dialect with a one-line system prompt, and tools with short free strings and
    key enums cut to a few names (the whole key vocabulary in every key field of the
    twelve hdesktop tools is more than the tiny model's 8192-token context)."""

    def tool_use(self) -> ToolUse:
        use = super().tool_use()
        return replace(use, tools=tuple(short_enums(short_strings(t)) for t in use.tools))


def short_enums(node: Any) -> Any:
    """Every enum of more than 8 values cut to its first 8, free strings held to
    letters, and the argument descriptions dropped (in place)."""
    if isinstance(node, list):
        for item in node:
            short_enums(item)
    elif isinstance(node, dict):
        if isinstance(node.get("enum"), list) and len(node["enum"]) > 8:
            node["enum"] = node["enum"][:8]
        if node.get("type") == "string" and not {"enum", "const", "pattern"} & set(node):
            # Letters only: xgrammar lets a raw control character into a JSON string,
            # which the hermes parser's json.loads then refuses (the call is lost). The
            # length goes into the pattern: with one, xgrammar ignores maxLength.
            low, high = node.get("minLength", 0), node.get("maxLength", 6)
            node["pattern"] = f"^[a-z]{{{low},{high}}}$"
        if node.get("type") != "function" and isinstance(node.get("description"), str):
            del node["description"]
        for value in node.values():
            short_enums(value)
    return node


def short_dialect(name: str) -> ShortToolDialect:
    base = get_dialect(name)
    spec = base.spec
    prompts = spec.prompts.model_copy(update={"system": "You control a desktop. Call a tool."})
    short = spec.model_copy(update={"prompts": prompts, "max_tokens": 400})
    return ShortToolDialect(short, base.parser)


def context(images: int = 3) -> StepContext:
    history = (
        HistoryStep(1, (Action("s-1", "f1", Click(Point(100, 100))),), "Open it.", "",
                    (ActionResult("s-1", ActionStatus.OK),), FRAME),
        HistoryStep(2, (Action("s-2", "f2", Click(Point(300, 200))),), "Again.", "",
                    (ActionResult("s-2", ActionStatus.FAILED, "no window"),), FRAME),
    )  # fmt: skip
    frames = tuple(
        EncodedFrame(f"f{n}", FRAME, ImageEncoding.PNG, png(512, 512, n).data)
        for n in range(1, images + 1)
    )
    return StepContext("s", "Save the file.", 3, frames=frames, history=history)


def conversation(dialect: ToolDialect, images: int = 3) -> tuple[ChatMessage, ...]:
    return dialect.step_messages(context(images), tuple(png(512, 512, n) for n in range(images)))
