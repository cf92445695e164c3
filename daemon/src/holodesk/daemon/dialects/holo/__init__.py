"""The Holo family: H Company's Holo models (Holo1, Holo1.5, Holo2) and Holotron-12B.

Where the format comes from: H Company's public cookbooks
(github.com/hcompai/hai-cookbook). A navigation step is one JSON object
``{"note": str, "thought": str, "action": {...}}`` whose action is one of
click_element (x, y, element), write_element_abs (content, x, y, element),
scroll (direction), go_back, refresh, goto (url), wait (seconds) and answer
(content). Coordinates differ by generation:

- Holo2 (Qwen3-VL based): x, y normalized to 0-1000 (dialect ``holo``);
- Holo1 / Holo1.5 (Qwen2.5-VL based): absolute pixels of the image *after* the
  processor's smart resize (dialect ``holo1.5``), which is why the resize rule
  is part of the dialect and reproduced exactly here.

The cookbooks keep the last few screenshots in the prompt and decode with the
answer's JSON schema; both are data here (history_images, structured_output).

Holotron-12B's own prompt and action format is not published. So everything
but the parsing code is a `DialectSpec` value, loadable and overridable from a
JSON/TOML file (`registry.load_dialect`), to be checked against the real
checkpoint's chat template on a GPU host.

The vocabulary (what the prompt lists, the schema allows, the parser reads and the
docs publish, docs/dialects/holo.md) is said once, vocabulary.py: the cookbook actions
plus desktop ones that reach the whole contract (any button, count and held
modifiers on click_element; write at the caret; scroll by an amount at a point;
mouse_down/up; move; drag along a path with button, modifiers, duration;
key_down/up; fail; ask_user). Beyond it the parser also accepts the names models
commonly use (click, type, key, hotkey as "ctrl+c", triple_click, middle_click,
drag from/to, ...): lenient reading, never a wider space.
A localization answer may give the element's box besides (or instead of) x/y:
"box" or "bbox" as [x1, y1, x2, y2] (or [[x1, y1], [x2, y2]]) in the same convention.

The package: vocabulary.py (the words: forms, readers, aliases), schema.py (the JSON
schema drawn from the forms), parser.py (the answer -> actions), spec.py (`holo`,
`holo1.5`: prompts, coordinate and image rules), holotron.py (`holotron`, the
daemon's default: Holo2's format on Nemotron-VL's image rule).
"""

from holodesk.daemon.dialects.family import Family
from holodesk.daemon.dialects.holo.holotron import HOLOTRON
from holodesk.daemon.dialects.holo.parser import HoloJsonParser
from holodesk.daemon.dialects.holo.spec import HOLO, HOLO_1_5

__all__ = ["FAMILY", "HOLO", "HOLOTRON", "HOLO_1_5", "HoloJsonParser"]

FAMILY = Family("holo", (HOLOTRON, HOLO, HOLO_1_5), (HoloJsonParser(),))
