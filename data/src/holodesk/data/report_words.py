"""The words a session report shows: each action in one line, from the Actions
message's JSON (coordinates in frame pixels), and the escaping every recorded
string goes through on its way into the page (a task, a web page's text echoed by
the model: untrusted, never interpolated raw)."""

from __future__ import annotations

import html
from collections.abc import Callable

from holodesk.data.stepview import Json

_SCROLL_ARROWS = {(0, 1): "↓", (0, -1): "↑", (1, 0): "→", (-1, 0): "←"}


def e(value: object) -> str:
    """Escaped for HTML text and double-quoted attribute values."""
    return html.escape(str(value), quote=True)


def describe(action: Json) -> str:
    """One line per action, from the Actions message's JSON (coordinates in frame pixels)."""
    for kind, words in _DESCRIBERS.items():
        if kind in action:
            body = action[kind] if isinstance(action[kind], dict) else {}
            return words(body)
    return "unknown action"


def _pt(raw: object) -> str:
    if not isinstance(raw, dict):
        return "(?)"
    return f"({float(raw.get('x', 0)):g}, {float(raw.get('y', 0)):g})"


def button_name(raw: object) -> str:
    return str(raw or "MOUSE_BUTTON_LEFT").removeprefix("MOUSE_BUTTON_").lower()


def modifiers_text(body: Json) -> str:
    mods = [str(m).removeprefix("MODIFIER_").lower() for m in body.get("modifiers") or []]
    return "".join(f"+{m}" for m in mods)


def click_label(click: Json) -> str:
    button = button_name(click.get("button"))
    count = int(click.get("count") or 1)
    words = [] if button == "left" else [button]
    if count > 1:
        words.append(f"×{count}")
    if click.get("modifiers"):
        words.append(modifiers_text(click).lstrip("+"))
    return " ".join(words)


def scroll_words(dx: int, dy: int) -> str:
    parts = []
    if dy:
        parts.append(f"{_SCROLL_ARROWS[(0, 1 if dy > 0 else -1)]}{abs(dy)}")
    if dx:
        parts.append(f"{_SCROLL_ARROWS[(1 if dx > 0 else -1, 0)]}{abs(dx)}")
    return "scroll " + " ".join(parts)


def _click_words(b: Json) -> str:
    count = int(b.get("count") or 1)
    times = f" ×{count}" if count > 1 else ""
    return (
        f"click {button_name(b.get('button'))}{times}{modifiers_text(b)} at {_pt(b.get('point'))}"
    )


def _drag_words(b: Json) -> str:
    path = " → ".join(_pt(p) for p in b.get("path") or [])
    return f"drag {button_name(b.get('button'))}{modifiers_text(b)} {path}"


def _press_words(verb: str, b: Json) -> str:
    where = f" at {_pt(b['point'])}" if "point" in b else ""
    return f"{verb} {button_name(b.get('button'))}{where}"


def _scroll_action_words(b: Json) -> str:
    words = scroll_words(int(b.get("dx", 0)), int(b.get("dy", 0)))
    return f"{words} at {_pt(b.get('point'))}"


_DESCRIBERS: dict[str, Callable[[Json], str]] = {
    "click": _click_words,
    "move": lambda b: f"move to {_pt(b.get('point'))}",
    "mouse_down": lambda b: _press_words("mouse down", b),
    "mouse_up": lambda b: _press_words("mouse up", b),
    "drag": _drag_words,
    "scroll": _scroll_action_words,
    "type_text": lambda b: f"type “{b.get('text', '')}”",
    "key_chord": lambda b: "keys " + "+".join(str(k) for k in b.get("keys") or []),
    "key_down": lambda b: f"key down {b.get('key', '')}",
    "key_up": lambda b: f"key up {b.get('key', '')}",
    "wait": lambda b: f"wait {int(b.get('duration_ms') or 0)} ms",
    "navigate": lambda b: f"open {b.get('url', '')}",
    "done": lambda b: f"done: {b.get('answer', '')}",
    "fail": lambda b: f"fail: {b.get('reason', '')}",
    "ask_user": lambda b: f"ask the user: {b.get('question', '')}",
}
