"""How much one batch, and one action's text, may ask of the desktop.

Nothing in the contract bounds them: one type action could carry megabytes of
keystrokes, one batch a million actions, and either would hold the desktop for
minutes. Past a bound the client refuses before any input is sent, with a reason
the model reads in the action's result, so it can split the work.
"""

from __future__ import annotations

from collections.abc import Sequence

from holodesk.client import actions as a


def typed_characters(action: a.Action) -> int:
    """The characters an action types: its text, or a URL typed into an address bar
    (a web target loads it directly, but counting it there too is harmless)."""
    if isinstance(action, a.TypeText):
        return len(action.text)
    if isinstance(action, a.Navigate):
        return len(action.url)
    return 0


def text_refusal(action: a.Action, max_chars: int) -> str:
    """Why the action types too much for one action ('' when it does not; 0: no limit)."""
    count = typed_characters(action)
    if not max_chars or count <= max_chars:
        return ""
    return (
        f"this action types {count:,} characters; this client types at most "
        f"{max_chars:,} per action (--max-type-chars): send the text in smaller actions"
    )


def batch_refusal(actions: Sequence[a.Action], max_actions: int) -> str:
    """Why the batch is too long to run ('' when it is not). Batches past the
    contract's limit never get here (holodesk.client.convert refuses them)."""
    if len(actions) <= max_actions:
        return ""
    return (
        f"this batch has {len(actions):,} actions; this client runs at most "
        f"{max_actions:,} per batch (--max-batch): none of it ran, send fewer per step"
    )
