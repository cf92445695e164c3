"""Which pixels an engine's image processor was handed for a prompt image.

Why its own module: a trainer that recomputes the vision inputs (pixel values) for
a step's recorded prompt token ids must feed the model's processor exactly what the
engine fed it, or the image placeholder tokens in those ids and the pixel values
disagree (another tile grid, another patch count). That is not always the image at
the size the prompt records: with an in-process engine (vLLM, transformers) a
dialect may leave the resize to the engine's own processor, which then got the
frame as sent.

Each prompt image says which (Generation.images[].resized, dialects/images.py):
resized, the recorded frame resized (bicubic) to the prompt image's size; else the
recorded frame as is.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineInput:
    """The pixels the engine got: the recorded frame, resized first when `resize` is set."""

    resize: tuple[int, int] | None


def engine_input(
    resized: bool, frame_size: tuple[int, int], prompt_size: tuple[int, int]
) -> EngineInput:
    """The engine's pixels for a prompt image of `prompt_size` made from a recorded
    frame of `frame_size`."""
    return EngineInput(prompt_size if resized and prompt_size != frame_size else None)
