"""The `holotron` dialect: Holotron-12B (H Company and NVIDIA), the daemon's default.

Holotron-12B's own prompt and action format is NOT published. It is post-trained
from NVIDIA Nemotron Nano 12B v2 VL on H Company's localization and navigation
data, so this dialect is an informed guess with two halves:

- the answer format and coordinates of its sibling Holo2: the `holo` JSON
  format ``{note, thought, action}``, coordinates normalized to 0-1000
  (see __init__.py for where that format comes from);
- the image rule of its base model, Nemotron Nano VL: dynamic tiling into
  512x512 tiles, at most 12 tiles plus a thumbnail when there is more than one
  tile, 256 tokens per tile (coords.TileResize). A 1920x1080 screenshot goes
  onto a 4x2 grid: 8 tiles + thumbnail = 2304 tokens; each screenshot in the
  prompt (3 on average, see DialectSpec.history_layout) costs that much prefill.

It MUST be validated against the real checkpoint's chat template on a GPU host
(`holodesk model check`): the system prompt (Nemotron templates also read
/think and /no_think switches there), the JSON answer and the coordinate
convention are all assumptions until a run shows the model answering in them.
Everything here is data: a JSON/TOML dialect file with ``base = "holotron"``
overrides any field without code changes (see registry.py).

Frames: clients are asked for at most 2048 px a side (a 4-tile grid edge), so
common screens are not downsized below what the grid shows; given the screen
size, `Dialect.frame_spec` narrows the box to the chosen grid.
"""

from __future__ import annotations

from typing import Any

from holodesk.daemon.dialects.holo.spec import HOLO
from holodesk.daemon.dialects.spec import FrameRequest, ResizeSpec
from holodesk.daemon.frames import ImageEncoding

HOLOTRON = HOLO.model_copy(
    update={
        "name": "holotron",
        "description": "Holotron-12B (unpublished format; Holo2 JSON, coordinates 0-1000, "
        "Nemotron-VL 512 px tiles): validate on a GPU host with `holodesk model check`",
        "resize": ResizeSpec(
            kind="tile", tile_size=512, max_tiles=12, min_tiles=1, thumbnail=True,
            tokens_per_tile=256,
        ),
        "frame": FrameRequest(
            max_width=2048, max_height=2048, encoding=ImageEncoding.PNG
        ),
    }
)  # fmt: skip


def holotron_images() -> dict[str, Any]:
    """Holotron-12B's image side (the resize rule, the model image's encoding, the
    frames asked for): what any dialect for the daemon's default model takes, whatever
    its answer format (hdesktop, nemotron-tools)."""
    return {
        "resize": HOLOTRON.resize,
        "model_image_encoding": HOLOTRON.model_image_encoding,
        "frame": HOLOTRON.frame,
    }
