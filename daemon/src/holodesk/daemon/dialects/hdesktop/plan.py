"""The `hdesktop` plan: update_plan's goals, carried in the step's note.

update_plan acts on nothing on the desktop, so its step has no actions; what it
changes is the plan the model reads in every later prompt. A session keeps of a
step only its actions, thought and note (HistoryStep), so the goals ride in the
note, after the model's own note, as one ``<plan>[...]</plan>`` JSON block: readable
in recordings and the tray, and read back exactly when the history is replayed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

_OPEN = "<plan>["
_CLOSE = "]</plan>"


@dataclass(frozen=True)
class Goal:
    title: str
    status: str  # todo, running, done, failed


def with_plan(note: str, goals: Iterable[Goal]) -> str:
    """The note with the plan appended (the model's note first, unchanged)."""
    block = json.dumps(
        [{"title": g.title, "status": g.status} for g in goals], ensure_ascii=False
    ).replace("<", "\\u003c")  # "<" escaped: no title can look like the block's opening
    return f"{note}\n<plan>{block}</plan>" if note else f"<plan>{block}</plan>"


def split_plan(note: str) -> tuple[str, tuple[Goal, ...] | None]:
    """(the model's own note, the plan it carries or None)."""
    start = note.rfind(_OPEN)
    if start < 0 or not note.endswith(_CLOSE) or (start > 0 and note[start - 1] != "\n"):
        return note, None
    try:
        raw = json.loads(note[start + len("<plan>") : -len("</plan>")])
    except ValueError:
        return note, None
    if not isinstance(raw, list) or not all(_is_goal(g) for g in raw):
        return note, None
    goals = tuple(Goal(g["title"], g["status"]) for g in raw)
    return note[: max(0, start - 1)], goals


def _is_goal(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("title"), str)
        and isinstance(value.get("status"), str)
    )


def plan_lines(goals: Iterable[Goal]) -> str:
    """The plan as the model reads it back: one goal a line."""
    return "\n".join(f"- [{g.status}] {' '.join(g.title.split())}" for g in goals)
