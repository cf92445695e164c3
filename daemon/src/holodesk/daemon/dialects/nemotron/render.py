"""The `nemotron-tools` family, rendering history: the actions of an earlier step ->
the one call that asks for them (coordinates back in 0-1 of the screenshot), so the
conversation replays each step in the model's own words. Each tool and computer
action writes itself back (`back`, beside its reader in vocabulary.py).

Total, unlike the reading: an action the tools cannot say gives None (the prompt then
falls back to text), never an error.
"""

from __future__ import annotations

from collections.abc import Sequence

from holodesk.daemon.actions import ActionKind
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.nemotron.vocabulary import TOOLS
from holodesk.daemon.dialects.tool_prompt import RenderedCall

# The order the history asks the tools in: the most general (computer) last.
_ASKED = tuple(sorted(TOOLS, key=lambda word: word.read.asked_last))


def call_of(
    actions: Sequence[ActionKind], note: str, geometry: ImageGeometry | None
) -> RenderedCall | None:
    acts = tuple(actions)
    for word in _ASKED:
        arguments = None if word.read.back is None else word.read.back(acts, geometry)
        if arguments is not None:
            return RenderedCall(word.name, arguments)
    return None
