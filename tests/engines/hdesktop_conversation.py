"""An hdesktop conversation for the tiny models: step 3 of a session whose step 1 was a
click (its tool output follows) and step 2 an update_plan, three screenshots, every
turn kind the harness's layout has (consecutive user turns, assistant JSON turns).

The system prompt is cut to one line (the tiny tokenizer spends about a token per
character; the real one holds the whole schema), the layout is the dialect's own.
"""

from __future__ import annotations

import copy
from typing import Any

from holodesk.daemon.actions import Action, ActionResult, ActionStatus, Click, HistoryStep
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.dialects.hdesktop import HDesktopDialect
from holodesk.daemon.dialects.hdesktop.plan import Goal, with_plan
from holodesk.daemon.engines.base import ChatMessage
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Point, Size
from holodesk.daemon.steps import StepContext
from tests.engines.support import png

FRAME = Size(512, 512)


def short_dialect() -> HDesktopDialect:
    spec = get_dialect("hdesktop").spec
    prompts = spec.prompts.model_copy(update={"system": "You control a desktop. Answer JSON."})
    # Short answers too: random weights never close their JSON, and 2 cores are slow.
    return HDesktopDialect(spec.model_copy(update={"prompts": prompts, "max_tokens": 16}))


def conversation(dialect: HDesktopDialect, images: int = 3) -> tuple[ChatMessage, ...]:
    click = Action("s-1", "f1", Click(Point(100, 100)))
    history = (
        HistoryStep(1, (click,), "Open it.", "a file list", (ActionResult("s-1", ActionStatus.OK),),
                    FRAME),
        HistoryStep(2, (), "Plan.", with_plan("", (Goal("Save the file", "running"),)), (),
                    FRAME),
    )  # fmt: skip
    frames = tuple(EncodedFrame(f"f{n}", FRAME, ImageEncoding.PNG) for n in (1, 2, 3))
    context = StepContext("s", "Save the file.", 3, frames=frames, history=history)
    return dialect.step_messages(context, tuple(png(512, 512, n) for n in range(images)))


def short_strings(node: Any) -> Any:
    """The schema with every free string at most 6 characters and lists at most 2."""
    node = copy.deepcopy(node)

    def walk(n: Any) -> None:
        if isinstance(n, list):
            for item in n:
                walk(item)
        elif isinstance(n, dict):
            if n.get("type") == "string" and "enum" not in n and "const" not in n:
                n["maxLength"] = min(n.get("maxLength", 6), 6)
            if n.get("type") == "array":
                n["maxItems"] = min(n.get("maxItems", 2), 2)
            for value in n.values():
                walk(value)

    walk(node)
    return node
