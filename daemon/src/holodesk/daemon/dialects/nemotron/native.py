"""`nemotron-tools` as a `ToolFamily` (tool_dialect.py): the tools a request carries
and what a call does (vocabulary.py), the call an earlier step came from (render.py),
and the action space (vocabulary.py)."""

from __future__ import annotations

from holodesk.daemon.dialects.nemotron.render import call_of
from holodesk.daemon.dialects.nemotron.vocabulary import action_space, effect, tools
from holodesk.daemon.dialects.tool_dialect import ToolFamily

NAME = "nemotron_tools"

FAMILY = ToolFamily(NAME, tools, effect, call_of, action_space)
