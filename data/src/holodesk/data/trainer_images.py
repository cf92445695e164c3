"""Which pixels an engine's image processor was handed for a prompt image.

Why its own module: a trainer that recomputes the vision inputs (pixel values) for
a step's recorded prompt token ids must feed the model's processor exactly what the
engine fed it, or the image placeholder tokens in those ids and the pixel values
disagree (another tile grid, another patch count). That is not always the image at
the size the prompt records: with an in-process engine (vLLM, transformers) a
dialect may leave the resize to the engine's own processor, which then got the
frame as sent.

The daemon names those pixels in the content id of each prompt image
(Generation.images[].content_id, dialects/images.py): the frame's content key for
the frame as sent, or that key followed by ``@<width>x<height>`` when the daemon
resized it (bicubic) to that size first. So:

- content id ending in ``@WxH``: the recorded frame resized to W x H, bicubic;
- any other content id: the recorded frame as is;
- no content id (unknown): the frame as is only when its size is the prompt's
  size, else unknown (None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RESIZED_SUFFIX = re.compile(r"@(?P<width>[1-9][0-9]*)x(?P<height>[1-9][0-9]*)$")


@dataclass(frozen=True)
class EngineInput:
    """The pixels the engine got: the recorded frame, resized first when `resize` is set."""

    resize: tuple[int, int] | None


def engine_input(
    content_id: str, frame_size: tuple[int, int], prompt_size: tuple[int, int]
) -> EngineInput | None:
    """The engine's pixels for a prompt image of `prompt_size` made from a recorded
    frame of `frame_size`; None when the recording cannot tell."""
    match = RESIZED_SUFFIX.search(content_id)
    if match is not None:
        size = (int(match["width"]), int(match["height"]))
        return EngineInput(None if size == frame_size else size)
    if content_id or frame_size == prompt_size:
        return EngineInput(None)
    return None
