"""The Nemotron family: NVIDIA's computer-use harness format for Nemotron-family
checkpoints, as native function tools (tool_dialect.py), dialect `nemotron-tools`.

Facts from the harness as issue 16 states them: five tools, navigate (url, or
"back"/"forward"), computer (a list of actions such as left_click, type, key_press,
scroll with scroll_parameters {scroll_direction, scroll_amount}, left_click_drag with
start_coordinate, wait with duration), tabs_create (url), tabs_focus (tab_id),
terminate (status, answer); coordinates in [0, 1], normalised to the screenshot;
each call's result goes back as the call's output; older screenshots are dropped.
The action names beyond those (right/middle/double/triple click, mouse_move) and
every description are holodesk's own reading.

Calls and the contract actions they become:

    computer(actions)                  each action in order:
      left/right/middle_click          click with that button
      double_click, triple_click       click count 2, 3 (left)
      mouse_move(coordinate)           move
      left_click_drag(start_coordinate, coordinate)   drag along the two points
      type(text)                       type_text where the focus is
      key_press(keys)                  key_chord(keys)
      scroll(coordinate, scroll_parameters)   scroll there, +/-amount notches
      wait(duration)                   wait, seconds (at most the spec's max_wait_s)
    navigate(url)                      navigate; "back"/"forward": alt+left/right
    tabs_create(url)                   ctrl+t, then navigate (no url: the new tab)
    tabs_focus(tab_id)                 ctrl+tab_id, 1-9 (9: the last tab)
    terminate(status, answer)          done(answer) on success, fail(answer) else

What the tools cannot say is `GAPS` (the docs list it): side buttons, modifiers held
for one click, a press or release alone, a held key, a drag other than a left one
through two points, asking the person.

The package: schema.py (the computer actions' and tools' schemas, the shared bounds),
vocabulary.py (the tools and actions as words: readers, schemas, forms, and the
gaps), render.py (actions -> the call, for the history), native.py (the ToolFamily),
spec.py (`nemotron-tools`).
"""

from types import MappingProxyType

from holodesk.daemon.dialects.family import Family
from holodesk.daemon.dialects.nemotron.native import FAMILY as NATIVE
from holodesk.daemon.dialects.nemotron.spec import NEMOTRON_TOOLS
from holodesk.daemon.dialects.tool_dialect import ToolCallParser, ToolDialect

__all__ = ["FAMILY", "NATIVE", "NEMOTRON_TOOLS"]

FAMILY = Family(
    "nemotron",
    (NEMOTRON_TOOLS,),
    (ToolCallParser(NATIVE),),
    MappingProxyType({NATIVE.name: ToolDialect}),
)
