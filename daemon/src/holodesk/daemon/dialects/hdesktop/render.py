"""Contract actions -> the `hdesktop` tool call they came from, so an earlier step
goes back into the prompt as the model's own parsed step, never its raw text. Each
tool of the vocabulary writes its own arguments back (`Tool.back`, vocabulary.py),
the inverse of its reader: parsing what this renders gives the same actions again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from holodesk.daemon.actions import ActionKind, describe
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.hdesktop.plan import Goal
from holodesk.daemon.dialects.hdesktop.vocabulary import WORDS

ToolCall = dict[str, Any]


def tool_call(
    actions: Sequence[ActionKind], geometry: ImageGeometry | None, plan: tuple[Goal, ...] | None
) -> ToolCall | None:
    """The tool call that parses to `actions` (None: no tool of the format does); the
    plan counts only for a step without actions (an update_plan)."""
    acts = tuple(actions)
    for word in WORDS:
        arguments = word.read.back(acts, geometry, plan)
        if arguments is not None:
            return {"tool_name": word.name, **arguments}
    return None


def tool_name(actions: Sequence[ActionKind], plan: tuple[Goal, ...] | None) -> str:
    call = tool_call(actions, None, plan)
    return str(call["tool_name"]) if call is not None else "desktop"


def fallback_text(actions: Sequence[ActionKind]) -> str:
    """Actions no tool stands for (another policy's), described plainly."""
    return "; ".join(describe(a) for a in actions)
