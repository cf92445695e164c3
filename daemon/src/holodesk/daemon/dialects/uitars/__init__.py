"""The UI-TARS family: ByteDance UI-TARS's text action format.

Where the format comes from: the UI-TARS paper (arXiv 2501.12326), the
bytedance/UI-TARS repository (its computer-use prompt template and
``codes/ui_tars/action_parser.py``), the UI-TARS-1.5 model card, and the
UI-TARS-desktop SDK (``@ui-tars/action-parser``). An answer is free text::

    Thought: The search box is at the top; I will type the query and submit.
    Action: type(content='weather in Paris\\n')

Several actions are separated by blank lines. The action space: click,
left_double, right_single (start_box), drag (start_box, end_box), hotkey
(key='ctrl c': lower case, space separated), type (content; a trailing \\n
means press Enter), scroll (start_box, direction), wait() (5 s), finished
(content) and call_user(). Positions are written '(x,y)',
'<|box_start|>(x,y)<|box_end|>', '<point>x y</point>' or as a box
'(x1,y1,x2,y2)' / '[x1,y1,x2,y2]' / '<|box_start|>(x1,y1),(x2,y2)<|box_end|>'
whose centre is meant (Locate also reports the box itself). Content strings use
Python escapes (\\' \\" \\n), which is how the reference parser reads them.

Two coordinate conventions, so two dialects:

- ``uitars`` (UI-TARS-1.5, Qwen2.5-VL based): absolute pixels of the image
  after the processor's smart resize (factor 28, min_pixels 100*28*28,
  max_pixels 16384*28*28). The daemon sends exactly that image, so the
  engine's own resize is the identity; keep the engine's max_pixels at least
  as large or the coordinates stop matching.
- ``uitars1.0`` (UI-TARS 1.0 / 2B-7B-72B, Qwen2-VL based; UI-TARS-desktop's
  default factor 1000): relative coordinates 0-1000, independent of resizing
  (images capped at 2700*28*28 pixels as in UI-TARS-desktop).

Differences from the reference parsers, all on the lenient side: quotes inside
a value need no escaping wherever the value's end is unambiguous; the names
agents commonly use besides the prompt's (left_single, select, hover/move_to,
press, keydown/keyup/release, mouse_down/mouse_up, the <point>/<bbox> and
point=/start_point= spellings of UI-TARS-1.5 computer use) are accepted; bare
calls without "Action:" are accepted; unknown Python escapes are kept as
written. Coordinates outside the image, unknown actions and malformed calls
are a DialectParseError whose hint a retry shows the model. ``press`` is a key
press and release (the reference emits only the key-down).

There is no JSON schema (the format is free text), so structured decoding is
off; the parser is the only validation.

The prompt follows the structure of UI-TARS's computer-use prompt (a role
line, the output format, the action space with short notes, then the user's
instruction), in our own words. As in UI-TARS agents, the conversation replays
earlier steps as the model's own Thought/Action turns, each after its
screenshot while that is shown (history_style "turns"): 5 on average, in
blocks so that each step's conversation begins with the previous one's
(history_layout "append"; "window" keeps exactly the last 5).

The package: calls.py (answer text -> calls), vocabulary.py (the words: forms,
readers, aliases, and the gaps), render.py (actions -> calls, for the history),
parser.py, spec.py (`uitars`, `uitars1.0`).
"""

from holodesk.daemon.dialects.family import Family
from holodesk.daemon.dialects.uitars.parser import UiTarsParser
from holodesk.daemon.dialects.uitars.spec import UITARS, UITARS_1_0

__all__ = ["FAMILY", "UITARS", "UITARS_1_0", "UiTarsParser"]

FAMILY = Family("uitars", (UITARS, UITARS_1_0), (UiTarsParser(),))
