"""Data sets for the grounding runner's tests: screens with words drawn at known places
(the OCR policy finds text, so real hits, misses and "absent" answers happen), written
in each benchmark's exact layout by tests.data.grounding.layouts."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from holodesk.client import cli

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
Corners = tuple[int, int, int, int]


def word_screen(
    words: Mapping[str, tuple[int, int]], size: tuple[int, int] = (480, 240)
) -> tuple[bytes, dict[str, Corners]]:
    """A PNG of black words on white at the given top-left corners, and each word's
    x1, y1, x2, y2 in pixels."""
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(FONT, 28)
    boxes: dict[str, Corners] = {}
    for word, (x, y) in words.items():
        draw.text((x, y), word, fill="black", font=font)
        left, top, right, bottom = draw.textbbox((x, y), word, font=font)
        boxes[word] = (int(left), int(top), int(right), int(bottom))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue(), boxes


# Two screens; instructions are the words the OCR policy looks for.
SCREEN_A = {"Submit": (30, 30), "Cancel": (260, 150)}
SCREEN_B = {"Settings": (40, 160), "Profile": (280, 40)}


def xywh(box: Corners, pad: int = 4) -> list[int]:
    x1, y1, x2, y2 = box
    return [x1 - pad, y1 - pad, x2 - x1 + 2 * pad, y2 - y1 + 2 * pad]


def screenspot_v2_records() -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Eight ScreenSpot-v2 samples over two screens, and each one's expected outcome:
    hits where the annotation boxes the word, a miss where it boxes somewhere else,
    "absent" where the word is not on the screen."""
    a, boxes_a = word_screen(SCREEN_A)
    b, boxes_b = word_screen(SCREEN_B)
    records: list[dict[str, Any]] = []
    expected: dict[str, str] = {}

    def add(platform: str, image: str, data: bytes, instruction: str, bbox: list[int],
            kind: str, outcome: str) -> None:  # fmt: skip
        records.append(
            {"_platform": platform, "_image": data, "img_filename": image, "bbox": bbox,
             "instruction": instruction, "data_type": kind, "data_source": "tests"}
        )  # fmt: skip
        expected[f"{platform}-{sum(1 for r in records if r['_platform'] == platform) - 1}"] = (
            outcome
        )

    add("mobile", "a.png", a, "Submit", xywh(boxes_a["Submit"]), "text", "hit")
    add("mobile", "a.png", a, "Cancel", xywh(boxes_a["Cancel"]), "icon", "hit")
    add("mobile", "a.png", a, "Unicorn", xywh(boxes_a["Submit"]), "text", "absent")
    add("desktop", "b.png", b, "Settings", xywh(boxes_b["Settings"]), "text", "hit")
    add("desktop", "b.png", b, "Profile", xywh(boxes_b["Settings"]), "icon", "miss")
    add("web", "a.png", a, "Cancel", xywh(boxes_a["Submit"]), "text", "miss")
    add("web", "b.png", b, "Profile", xywh(boxes_b["Profile"]), "icon", "hit")
    add("web", "b.png", b, "Settings", xywh(boxes_b["Settings"]), "text", "hit")
    return records, expected


def holodesk(*args: str | Path) -> int:
    return cli.main([str(a) for a in args])


async def holodesk_async(*args: str | Path) -> int:
    """The CLI in a thread, so a daemon serving in this loop answers it."""
    return await asyncio.to_thread(holodesk, *args)


def eval_argv(*args: str | Path) -> list[str]:
    """A `holodesk eval ...` command line for a process of its own (one to kill)."""
    return [sys.executable, "-m", "holodesk.client", "eval", *(str(a) for a in args)]


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def ids(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(row["id"]) for row in rows]
