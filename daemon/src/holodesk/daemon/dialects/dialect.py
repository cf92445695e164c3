"""A dialect at run time: its data (`DialectSpec`) bound to its output parser."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from holodesk.daemon.actions import ActionKind
from holodesk.daemon.dialects import images, prompt
from holodesk.daemon.dialects.action_space import ActionSpace, action_space_of
from holodesk.daemon.dialects.base import (
    DialectParseError,
    LocatedTarget,
    OutputParser,
    ParsedStep,
)
from holodesk.daemon.dialects.coords import CoordinateConvention, ImageGeometry, fit_in_box
from holodesk.daemon.dialects.schema_views import bound_pixels, compact_schema
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.engines.base import ChatMessage, ImagePart, SamplingParams, ToolUse
from holodesk.daemon.frames import EncodedFrame, FrameSpec, ImageEncoding
from holodesk.daemon.geometry import Size
from holodesk.daemon.steps import StepContext

# What a client can encode when it says nothing (the contract's default).
_DEFAULT_ACCEPTED = (ImageEncoding.PNG, ImageEncoding.JPEG)


class Dialect:
    def __init__(self, spec: DialectSpec, parser: OutputParser) -> None:
        self.spec = spec
        self.parser = parser
        self._resize = spec.resize.rule()
        # The spec is frozen: its action space and schema are made once.
        self.action_space: ActionSpace | None = action_space_of(self.parser, spec)
        self._step_schema = self.parser.step_schema(spec)

    @property
    def name(self) -> str:
        return self.spec.name

    @functools.cached_property
    def prompt_hash(self) -> str:
        """ "sha256:<hex>" of what shapes the question and reads the answer: the spec
        as canonical JSON (templates, parser, coordinate rules, resize, sampling; its
        name and description left out, so a renamed copy hashes the same) and the
        parser's schemas, which live in code. Equal hashes ask the model the same way."""
        payload = {
            "spec": self.spec.model_dump(mode="json", exclude={"name", "description"}),
            "location_schema": self.parser.location_schema(self.spec),
            "step_schema": self._step_schema,
        }
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    def geometry(self, frame_size: Size) -> ImageGeometry:
        return ImageGeometry.for_frame(frame_size, self._resize, self.spec.coordinates)

    def frame_spec(
        self, accepted: tuple[ImageEncoding, ...] = (), screen: Size | None = None
    ) -> FrameSpec:
        """What clients should send. Given the screen's size, the box also shrinks
        to the image the model will see of it, so no bandwidth goes on pixels the
        model never sees (a 4K screen under 512 px tiles: sent 1820x1024). A screen
        only slightly larger than that image is asked for as it is (1920x1080 under
        tiles, whose image is 2048x1024): downsizing it first would resample the text
        twice (client, then the daemon's stretch to the grid), blurring what the model
        reads and making PNG and delta patches several times larger."""
        wanted = self.spec.frame.encoding
        usable = accepted or _DEFAULT_ACCEPTED
        if wanted not in usable:
            wanted = ImageEncoding.PNG if ImageEncoding.PNG in usable else usable[0]
        box_w, box_h = self.spec.frame.max_width, self.spec.frame.max_height
        if screen is not None and screen.width > 0 and screen.height > 0:
            seen = self._resize.apply(fit_in_box(screen, box_w, box_h))
            if _sent_as_is(screen, seen, box_w, box_h):
                box_w, box_h = screen.width, screen.height
            else:
                box_w = seen.width if box_w == 0 else min(box_w, seen.width)
                box_h = seen.height if box_h == 0 else min(box_h, seen.height)
        return FrameSpec(
            max_width=box_w, max_height=box_h, encoding=wanted, quality=self.spec.frame.quality
        )

    def image_tokens(self, frame_size: Size) -> int | None:
        """Prompt tokens of one screenshot of this size (None: the resize rule does
        not say); a step's prompt holds up to `spec.frames_kept` of them."""
        return self._resize.image_tokens(frame_size)

    def model_image(
        self,
        frame: EncodedFrame,
        *,
        engine_resizes: bool = False,
        decoded: images.PixelLookup | None = None,
    ) -> ImagePart:
        """The model's image of the frame, made (decoded, resized) only when an engine
        asks: call its pixels() or encoded() off the event loop.

        `engine_resizes`: the engine runs the model's image processor
        (`Engine.processes_images`). The resize is left to it when the model's
        coordinates are independent of the image's size and its processor's rule is
        this dialect's for the frame: the image is then resampled once, by the
        processor, exactly as the model was trained to see it. `decoded`: where the
        daemon may hold the frame decoded already.
        """
        return images.model_image(
            frame,
            self.geometry(frame.size),
            self.spec.model_image_encoding,
            self.spec.model_image_quality,
            leave_resize=engine_resizes and self.leaves_resize(frame.size),
            decoded=decoded,
        )

    def leaves_resize(self, frame_size: Size) -> bool:
        """Whether an engine running the model's processor may resize frames of this size."""
        size_free = self.spec.coordinates is not CoordinateConvention.RESIZED_PIXELS
        return size_free and self._resize.processor_agrees(frame_size)

    def sampling(self) -> SamplingParams:
        return SamplingParams(max_tokens=self.spec.max_tokens, temperature=self.spec.temperature)

    def tool_use(self) -> ToolUse | None:
        """The function tools each step's request offers (None: the model answers in
        text; tool-calling dialects, tool_dialect.py, offer theirs)."""
        return None

    def step_schema(self, geometry: ImageGeometry | None = None) -> dict[str, Any] | None:
        """The schema structured decoding holds a step to (None: decoding is free).
        Given the step's geometry, pixel coordinates are bounded by the model's image
        too, so a model held to it cannot write a point the parser refuses."""
        if not self.spec.structured_output or self._step_schema is None:
            return None
        return bound_pixels(self._step_schema, geometry)

    def location_schema(self, geometry: ImageGeometry | None = None) -> dict[str, Any] | None:
        schema = self.parser.location_schema(self.spec) if self.spec.structured_output else None
        return None if schema is None else bound_pixels(schema, geometry)

    def step_messages(
        self, context: StepContext, images: tuple[ImagePart, ...]
    ) -> tuple[ChatMessage, ...]:
        shown = None if self._step_schema is None else compact_schema(self._step_schema)
        return prompt.step_messages(
            self.spec, context, images, shown, self._render, self.action_list()
        )

    def action_list(self) -> str:
        """The prompt's action list ({action_list}): the action space, a line per form."""
        return "" if self.action_space is None else self.action_space.action_list()

    def _render(self, actions: Sequence[ActionKind], geometry: ImageGeometry | None) -> str:
        return self.parser.render_actions(actions, self.spec, geometry)

    def repair_messages(
        self, messages: tuple[ChatMessage, ...], bad_output: str, error: DialectParseError
    ) -> tuple[ChatMessage, ...]:
        return prompt.repair_messages(self.spec, messages, bad_output, error.message, error.hint)

    def locate_messages(self, image: ImagePart, description: str) -> tuple[ChatMessage, ...]:
        schema = self.parser.location_schema(self.spec)
        return prompt.locate_messages(self.spec, image, description, schema)

    def parse_step(self, text: str, geometry: ImageGeometry) -> ParsedStep:
        """Raises DialectParseError and nothing else."""
        return self.parser.parse_step(text, self.spec, geometry)

    def parse_location(self, text: str, geometry: ImageGeometry) -> LocatedTarget:
        """Raises DialectParseError and nothing else."""
        return self.parser.parse_location(text, self.spec, geometry)


# A screen at most this much larger (per side) than the model's image is sent as it is.
NATIVE_SLACK = 1.2


def _sent_as_is(screen: Size, seen: Size, box_w: int, box_h: int) -> bool:
    within_box = (box_w == 0 or screen.width <= box_w) and (box_h == 0 or screen.height <= box_h)
    barely_larger = (
        screen.width <= seen.width * NATIVE_SLACK and screen.height <= seen.height * NATIVE_SLACK
    )
    return within_box and barely_larger
