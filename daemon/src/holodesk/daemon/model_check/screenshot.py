"""The bundled screenshot and its known target (drawn by tools/make_model_check_screenshot.py)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources

from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Point, Rect, Size

BUNDLED = "form-1280x800.json"


@dataclass(frozen=True)
class Screenshot:
    png: bytes
    size: Size
    # Frame pixels; a click inside it hits the target.
    target: Rect
    # What Locate is asked to find, and the navigation task that needs a click on it.
    locate: str
    task: str

    def frame(self, frame_id: str = "model-check") -> EncodedFrame:
        return EncodedFrame(frame_id, self.size, ImageEncoding.PNG, self.png)


def bundled_screenshot(name: str = BUNDLED) -> Screenshot:
    assets = resources.files("holodesk.daemon.model_check").joinpath("assets")
    meta = json.loads(assets.joinpath(name).read_text(encoding="utf-8"))
    box = meta["target"]
    return Screenshot(
        png=assets.joinpath(meta["image"]).read_bytes(),
        size=Size(int(meta["width"]), int(meta["height"])),
        target=Rect(int(box["x"]), int(box["y"]), int(box["width"]), int(box["height"])),
        locate=str(meta["locate"]),
        task=str(meta["task"]),
    )


def bundled_screenshots() -> tuple[Screenshot, ...]:
    """Every bundled screenshot (each `assets/*.json`), by file name: `--dialect auto`
    tries every dialect on all of them, so a screenshot added there is used."""
    assets = resources.files("holodesk.daemon.model_check").joinpath("assets")
    names = sorted(p.name for p in assets.iterdir() if p.name.endswith(".json"))
    return tuple(bundled_screenshot(name) for name in names)


def distance_to(box: Rect, point: Point) -> float:
    """Pixels from the point to the box (0 inside it or on its edge)."""
    dx = max(box.x - point.x, 0.0, point.x - (box.x + box.width))
    dy = max(box.y - point.y, 0.0, point.y - (box.y + box.height))
    return math.hypot(dx, dy)
