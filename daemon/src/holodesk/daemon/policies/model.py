"""ModelPolicy: a Dialect (prompt, parsing, coordinates) + an Engine (text).

Each step builds the prompt from the dialect's templates and the session's
encoded history, asks the engine, and parses. An unusable answer is retried
with the parse error's repair hint appended (the dialect's `parse_retries`,
2 by default); when every attempt fails, the decision is a Fail action, so the
session ends cleanly as FAILED with the reason naming the parse error.

Request ids are "<session_id>/<step>/<attempt>" ("locate-<id>-<n>/1/0" for Locate):
the part before the first "/" names the conversation.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from holodesk.daemon.actions import Fail
from holodesk.daemon.dialects import Dialect, DialectParseError
from holodesk.daemon.engines.base import (
    ChatMessage,
    Engine,
    EngineError,
    GenerationRequest,
    ImagePart,
)
from holodesk.daemon.frames import EncodedFrame, FrameSpec, ImageEncoding
from holodesk.daemon.geometry import Size
from holodesk.daemon.policies.base import Decision, Location, StepContext

log = logging.getLogger(__name__)


class ModelPolicy:
    def __init__(
        self,
        dialect: Dialect,
        engine: Engine,
        *,
        name: str | None = None,
        description: str | None = None,
        parse_retries: int | None = None,
    ) -> None:
        self.dialect = dialect
        self.engine = engine
        self.name = name or f"{engine.name}-{dialect.name}"
        self.description = description or f"{engine.name} engine, {dialect.name} dialect"
        self.parse_retries = dialect.spec.parse_retries if parse_retries is None else parse_retries
        self._ready = False
        self._inflight: dict[str, str] = {}

    @property
    def ready(self) -> bool:
        return self._ready

    @property
    def history_frames(self) -> int:
        return self.dialect.spec.history_images

    def frame_spec(
        self, accepted: tuple[ImageEncoding, ...], screen: Size | None = None
    ) -> FrameSpec:
        # Given the screen, the box shrinks to what the model sees: no sent pixel is wasted.
        return self.dialect.frame_spec(accepted, screen)

    async def start(self) -> None:
        await self.engine.start()
        self._ready = True

    async def decide(self, context: StepContext) -> Decision:
        geometry = self.dialect.geometry(context.frame.size)
        images = await asyncio.to_thread(self._model_images, context.frames)
        messages = self.dialect.step_messages(context, images)
        attempts = 1 + self.parse_retries
        error: DialectParseError | None = None
        text = ""
        for attempt in range(attempts):
            request_id = f"{context.session_id}/{context.step}/{attempt}"
            try:
                text = await self._generate(context.session_id, request_id, messages, step=True)
            except EngineError as exc:
                log.warning("engine %s failed on %s: %s", self.engine.name, request_id, exc)
                reason = f"engine {self.engine.name} failed: {exc}"
                return Decision((Fail(reason),), attempts=attempt + 1)
            try:
                parsed = self.dialect.parse_step(text, geometry)
            except DialectParseError as exc:
                log.info("unusable output on %s: %s", request_id, exc.message)
                error = exc
                messages = self.dialect.repair_messages(messages, text, exc)
                continue
            return Decision(
                actions=parsed.actions,
                thought=parsed.thought,
                note=parsed.note,
                raw_output=text,
                attempts=attempt + 1,
            )
        assert error is not None
        reason = f"model output unparseable after {attempts} attempt(s): {error.message}"
        return Decision((Fail(reason),), raw_output=text, attempts=attempts)

    async def locate(
        self, frame: EncodedFrame, descriptions: tuple[str, ...]
    ) -> tuple[Location, ...]:
        geometry = self.dialect.geometry(frame.size)
        image = await asyncio.to_thread(self.dialect.model_image, frame)
        batch = f"locate-{uuid.uuid4().hex}"

        async def one(index: int, description: str) -> Location:
            messages = self.dialect.locate_messages(image, description)
            # Each description is its own conversation: "<batch>-<n>/1/0".
            request_id = f"{batch}-{index}/1/0"
            text = await self._generate(request_id, request_id, messages, step=False)
            try:
                target = self.dialect.parse_location(text, geometry)
            except DialectParseError:
                return Location(description, found=False, raw_output=text)
            return Location(
                description, found=True, point=target.point, box=target.box, raw_output=text
            )

        # Concurrent requests: an engine with continuous batching runs them as one batch.
        return tuple(await asyncio.gather(*(one(i, d) for i, d in enumerate(descriptions))))

    async def abort(self, session_id: str) -> None:
        request_id = self._inflight.pop(session_id, None)
        if request_id is not None:
            await self.engine.abort(request_id)

    async def close(self) -> None:
        self._ready = False
        await self.engine.close()

    def _model_images(self, frames: tuple[EncodedFrame, ...]) -> tuple[ImagePart, ...]:
        return tuple(self.dialect.model_image(f) for f in frames)

    async def _generate(
        self, owner: str, request_id: str, messages: tuple[ChatMessage, ...], *, step: bool
    ) -> str:
        schema = self.dialect.step_schema() if step else self.dialect.location_schema()
        request = GenerationRequest(
            request_id=request_id,
            messages=messages,
            sampling=self.dialect.sampling(),
            json_schema=schema,
        )
        self._inflight[owner] = request_id
        try:
            result = await self.engine.generate(request)
        finally:
            if self._inflight.get(owner) == request_id:
                del self._inflight[owner]
        return result.text
