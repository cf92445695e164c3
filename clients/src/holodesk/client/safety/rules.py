"""The static rule: which action kinds may run (chords: holodesk.client.safety.keygate)."""

from __future__ import annotations

from holodesk.client import actions as a
from holodesk.client.safety.settings import ALWAYS_ALLOWED

_KINDS: dict[type, str] = {
    a.Click: "click",
    a.Move: "move",
    a.MouseDown: "mouse_down",
    a.MouseUp: "mouse_up",
    a.Drag: "drag",
    a.Scroll: "scroll",
    a.TypeText: "type_text",
    a.KeyChord: "key_chord",
    a.KeyDown: "key_down",
    a.KeyUp: "key_up",
    a.Wait: "wait",
    a.Navigate: "navigate",
    a.Done: "done",
    a.Fail: "fail",
    a.AskUser: "ask_user",
}


def action_kind(action: a.Action) -> str:
    """The contract's name for the action's kind ("unsupported" for unreadable ones)."""
    return _KINDS.get(type(action), "unsupported")


def disallowed(action: a.Action, allowed: frozenset[str] | None) -> str:
    """Why the allowlist refuses the action ('' when it may run)."""
    kind = action_kind(action)
    if allowed is None or kind in allowed or kind in ALWAYS_ALLOWED:
        return ""
    return f"{kind} actions are not allowed on this client (allowed: {', '.join(sorted(allowed))})"
