"""The static rules: which action kinds may run, which key chords never may."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from holodesk.client import actions as a
from holodesk.client.safety.chords import Chord, completes, describe, key_of
from holodesk.client.safety.settings import ALWAYS_ALLOWED
from holodesk.platform.errors import UnknownKeyError

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


def denied(action: a.Action, held: Sequence[str], chords: Sequence[Chord]) -> str:
    """Why the denylist refuses the action ('' when it may run).

    Keys already held down count (a key_down of ctrl, then alt, then delete is
    ctrl+alt+delete too), and so does each character typed while they are held.
    """
    if not chords:
        return ""
    held_keys = {_safe_key(k) for k in held} - {""}
    for pressed in _presses(action):
        for chord in chords:
            if completes(chord, held_keys, pressed):
                return f"the key chord {describe(chord)} is denied on this client"
    return ""


def _presses(action: a.Action) -> Iterable[set[str]]:
    """The groups of keys the action presses, each while the previous ones are released."""
    if isinstance(action, a.KeyChord):
        yield {_safe_key(k) for k in action.keys} - {""}
    elif isinstance(action, a.KeyDown):
        yield {_safe_key(action.key)} - {""}
    elif isinstance(action, a.Click | a.Drag):
        yield {_safe_key(k) for k in action.modifiers} - {""}
    elif isinstance(action, a.TypeText):
        for character in set(action.text):
            yield {_safe_key(character)} - {""}


def _safe_key(name: str) -> str:
    # An unknown key fails later, when the action is prepared; here it matches nothing.
    try:
        return key_of(name)
    except UnknownKeyError:
        return ""
