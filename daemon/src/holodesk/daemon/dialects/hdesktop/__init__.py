"""The hdesktop family: H Company's desktop agent format, as JSON steps (`hdesktop`)
and as native tool calls (`hdesktop-tools`).

Where it comes from: H Company's public desktop agent harness (the one that drives
Holo and Holotron checkpoints on a desktop). A step is one JSON object
``{"note": str | null, "thought": str, "tool_call": {"tool_name": ..., ...}}``,
exactly one tool call, enforced by structured decoding (schema.py). x and y
are integers in [0, 1000] across the screenshot. The conversation wraps each
screenshot in ``<observation>``, answers each tool call with
``<tool_output tool="NAME">`` (or ``<error tool="NAME">``), keeps only the last few
screenshots as images and puts only the parsed step back into the history
(prompt.py). The prompt wording is holodesk's own.

Tools and the contract actions they become (vocabulary.py; render.py is
the inverse, for the history):

    update_plan(goals)                     no action; the plan rides in the note
                                           (plan.py) and stays in view
    write_desktop(content, press_enter,    [ctrl+a, delete if overwrite] type_text
                  overwrite)               [enter if press_enter]; no click first
    click_desktop(element, x, y, button)   click, button left/right/middle
    double_click_desktop(element, x, y)    click count 2
    move_to_desktop(element, x, y)         move
    drag_to_desktop(element, x, y)         mouse_down (left, where the pointer is),
                                           mouse_up (left, at x, y)
    scroll_desktop(element, x, y,          scroll at x, y: dy = +/-scroll_size (down/up)
                   direction, scroll_size) or dx (right/left), 1-100 notches
    key_down_desktop(key) / key_up_desktop key_down / key_up
    hotkey_desktop(keys, repeat_count)     key_chord(keys), repeat_count times (1-20)
    hold_and_tap_key_desktop(hold_keys,    key_down each held key, key_chord of each
                             tap_keys)     tapped key in order, key_up in reverse
    answer(content)                        done(answer)

Keys: the contract's names plus pyautogui's ("esc", "cmd", "win", "pgdn", "shiftleft"
...) through `key_aliases`.

What the format has no word for (vocabulary.GAPS, for tests and docs): a triple
click; the back and forward buttons; modifiers held for one click or drag (said as
key_down_desktop, the click, key_up_desktop over three steps); a lone mouse down or
up, or a drag with another button, more points, held modifiers or a duration (the
drag is a left press at the pointer, a release at x, y); a scroll on both axes or
past 100 notches; typing after a click in one step (click, then write_desktop);
wait (update_plan is a step that does nothing), fail and ask_user (only answer
ends a task); navigate (hotkey ctrl+l, then write_desktop with press_enter).

The image rule and frames are Holotron-12B's (Nemotron-VL 512 px tiles), so that
`--dialect hdesktop` is a candidate format for the daemon's default model; for a
Holo2 checkpoint, a dialect file with ``base = "hdesktop"`` sets Holo2's
``[resize]`` (see dialects/holo). Everything but the parsing code is a `DialectSpec`.

The package: schema.py (the step's and each tool's JSON schema), vocabulary.py (the
tools as words: readers, schemas, forms, and the gaps), plan.py (update_plan's goals
in the note), render.py (actions -> the tool call, for the history), prompt.py (the
harness's conversation), parser.py (`HDesktopParser`, `HDesktopDialect`), native.py
(the tools called natively), spec.py (`hdesktop`, `hdesktop-tools`).
"""

from types import MappingProxyType

from holodesk.daemon.dialects.family import Family
from holodesk.daemon.dialects.hdesktop.native import FAMILY as NATIVE
from holodesk.daemon.dialects.hdesktop.parser import HDesktopDialect, HDesktopParser
from holodesk.daemon.dialects.hdesktop.spec import HDESKTOP, HDESKTOP_TOOLS
from holodesk.daemon.dialects.tool_dialect import ToolCallParser, ToolDialect

__all__ = ["FAMILY", "HDESKTOP", "HDESKTOP_TOOLS", "NATIVE", "HDesktopDialect", "HDesktopParser"]

FAMILY = Family(
    "hdesktop",
    (HDESKTOP, HDESKTOP_TOOLS),
    (HDesktopParser(), ToolCallParser(NATIVE)),
    MappingProxyType({HDesktopParser.name: HDesktopDialect, NATIVE.name: ToolDialect}),
)
