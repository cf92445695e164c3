"""OcrPolicy: the CPU baseline, the daemon's policy when there is no model.

Each step: decode the current frame, work out from the session history which
plan step is next, let the planner write a holo-dialect answer, and parse that
with the real holo dialect, so the coordinate mapping is the one a model's
answers get. Stateless across steps: progress lives in the history's notes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import TypeVar

from PIL import Image

from holodesk.daemon import frame_pixels
from holodesk.daemon.actions import Fail
from holodesk.daemon.dialects import Dialect, DialectParseError, get_dialect
from holodesk.daemon.dialects.coords import CoordinateConvention
from holodesk.daemon.frames import EncodedFrame, FrameSpec, ImageEncoding
from holodesk.daemon.geometry import Box, Point, Size
from holodesk.daemon.policies.base import Decision, Location, Pinning
from holodesk.daemon.policies.ocr.matching import find_text
from holodesk.daemon.policies.ocr.planner import PlannerConfig, plan
from holodesk.daemon.policies.ocr.progress import progress_from_history
from holodesk.daemon.policies.ocr.reader import ReaderConfig, TextBox, read_text
from holodesk.daemon.policies.ocr.replace import select_all_keys
from holodesk.daemon.policies.ocr.tesseract import (
    INSTALL_HINT,
    OcrError,
    TesseractConfig,
    TesseractNotFoundError,
)
from holodesk.daemon.steps import StepContext

DESCRIPTION = (
    "OCR baseline on the CPU (Tesseract): follows tasks written as steps such as "
    'click "OK"; type "text" into "Name"; press ctrl+s'
)

_T = TypeVar("_T", int, float)

OPTIONS: Mapping[str, str] = {
    "max_retries": "new frames to look at when a step's text is not on screen (default 3)",
    "retry_wait_s": "seconds between those looks (default 1)",
    "languages": "Tesseract languages, e.g. eng or eng+deu (default eng)",
    "tesseract": "path or name of the tesseract command (default tesseract)",
    "timeout_s": "seconds one OCR pass may take (default 30)",
}


@dataclass(frozen=True)
class OcrPolicyConfig:
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    reader: ReaderConfig = field(default_factory=ReaderConfig)
    # OCR passes at once, across all sessions; each is one single-threaded process.
    max_concurrent: int = field(default_factory=lambda: os.cpu_count() or 1)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> OcrPolicyConfig:
        """Options as strings (the CLI's --policy-opt); ValueError names a bad one."""
        unknown = set(options) - set(OPTIONS)
        if unknown:
            raise ValueError(f"unknown option(s) {sorted(unknown)}; known: {sorted(OPTIONS)}")
        planner = PlannerConfig(
            max_retries=_number(options, "max_retries", 3, int, 0, 100),
            retry_wait_s=_number(options, "retry_wait_s", 1.0, float, 0.0, 30.0),
        )
        tesseract = TesseractConfig(
            command=options.get("tesseract") or "tesseract",
            languages=options.get("languages") or "eng",
            timeout_s=_number(options, "timeout_s", 30.0, float, 0.1, 600.0),
        )
        return cls(planner=planner, reader=ReaderConfig(tesseract=tesseract))


class OcrPolicy:
    name = "ocr"
    description = DESCRIPTION

    def __init__(self, config: OcrPolicyConfig | None = None, dialect: Dialect | None = None):
        self.config = config or OcrPolicyConfig()
        self.dialect = dialect or get_dialect("holo")
        if self.dialect.spec.coordinates is not CoordinateConvention.NORMALIZED_1000:
            # The planner writes 0-1000 coordinates; another convention would misplace them.
            raise ValueError(
                f"the OCR policy needs a normalized_1000 dialect, not {self.dialect.name!r}"
            )
        self._slots = asyncio.Semaphore(max(1, self.config.max_concurrent))
        self._ready = False
        # What `tesseract --version` says first ("tesseract 5.3.0"), once started.
        self._tesseract = "tesseract"

    @property
    def ready(self) -> bool:
        return self._ready

    @property
    def history_frames(self) -> int:
        return 1  # OCR looks at the screen now, nothing older

    def frame_spec(
        self, accepted: tuple[ImageEncoding, ...], screen: Size | None = None
    ) -> FrameSpec:
        # Lossless when possible: JPEG ringing around small glyphs costs OCR accuracy.
        usable = accepted or (ImageEncoding.PNG, ImageEncoding.JPEG)
        encoding = ImageEncoding.PNG if ImageEncoding.PNG in usable else usable[0]
        return FrameSpec(max_width=1920, max_height=1920, encoding=encoding, quality=95)

    async def start(self) -> None:
        self._tesseract = await asyncio.to_thread(check_tesseract, self.config.reader.tesseract)
        self._ready = True

    def pinning(self) -> Pinning:
        """Tesseract's version as the model; the reader's and matcher's settings as the
        prompt (what decides which text is read and which matches); no resize, no
        sampling."""
        reader = asdict(self.config.reader)
        # How it runs, not what it reads.
        for name in ("command", "timeout_s", "threads"):
            reader["tesseract"].pop(name, None)
        settings = {"reader": reader, "match_threshold": self.config.planner.match_threshold}
        text = json.dumps(settings, sort_keys=True, separators=(",", ":"))
        return Pinning(
            policy=self.name,
            model=self._tesseract,
            engine="ocr",
            prompt_hash="sha256:" + hashlib.sha256(text.encode()).hexdigest(),
            resize_rule="none",
            coordinates="pixels",
        )

    async def decide(self, context: StepContext) -> Decision:
        progress = progress_from_history(context.history)
        # The keys that select a field's text depend on the client's platform.
        planner = replace(self.config.planner, select_all=select_all_keys(context.client_os))
        try:
            image = await asyncio.to_thread(_decode, context.frame)
            async with self._slots:
                text = await asyncio.to_thread(
                    plan, context.task, progress, image, planner, self._read
                )
        except OcrError as exc:
            return Decision((Fail(f"OCR failed: {exc}"),))
        try:
            parsed = self.dialect.parse_step(text, self.dialect.geometry(context.frame.size))
        except DialectParseError as exc:  # a planner bug, not the user's
            return Decision((Fail(f"OCR planner output unusable: {exc.message}"),), raw_output=text)
        return Decision(parsed.actions, parsed.thought, parsed.note, raw_output=text)

    async def locate(
        self, frame: EncodedFrame, descriptions: tuple[str, ...]
    ) -> tuple[Location, ...]:
        image = await asyncio.to_thread(_decode, frame)
        async with self._slots:
            words = await asyncio.to_thread(self._read, image)
        threshold = self.config.planner.match_threshold
        locations: list[Location] = []
        for description in descriptions:
            match = find_text(description, words, threshold)
            if match is None:
                # It read the whole image and no text matches: its way of saying the
                # target is not there (not an answer it failed to read).
                locations.append(Location(description, found=False, absent=True))
                continue
            left, top, right, bottom = match.box
            x, y = match.center
            raw = {"text": match.text, "score": round(match.score, 3), "box": list(match.box)}
            locations.append(
                Location(
                    description,
                    found=True,
                    point=Point(x, y),
                    box=Box(left, top, right, bottom),
                    raw_output=json.dumps(raw, ensure_ascii=False),
                )
            )
        return tuple(locations)

    async def abort(self, session_id: str) -> None:
        return None  # no per-session work outlives a decide() call

    async def close(self) -> None:
        self._ready = False

    def _read(self, image: Image.Image) -> list[TextBox]:
        return read_text(image, self.config.reader)


def create_ocr_policy(options: Mapping[str, str]) -> OcrPolicy:
    """The registry's factory."""
    return OcrPolicy(OcrPolicyConfig.from_options(options))


def check_tesseract(config: TesseractConfig) -> str:
    """Tesseract's version line ("tesseract 5.3.0"); TesseractNotFoundError, with how to
    install it, unless it runs."""
    command = shutil.which(config.command)
    if command is None:
        raise TesseractNotFoundError(f"{config.command!r} was not found on PATH; {INSTALL_HINT}")
    try:
        done = subprocess.run(
            [command, "--version"], capture_output=True, timeout=config.timeout_s, check=True
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise TesseractNotFoundError(f"{command} does not run ({exc}); {INSTALL_HINT}") from exc
    # Older versions print it on stderr.
    lines = (done.stdout or done.stderr).decode(errors="replace").splitlines()
    return lines[0].strip() if lines and lines[0].strip() else "tesseract"


def _decode(frame: EncodedFrame) -> Image.Image:
    """RGB pixels; InvalidArgument when the frame's bytes do not decode (the caller's
    error, as with every policy)."""
    return frame_pixels.decode(frame).convert("RGB")


def _number(
    options: Mapping[str, str], name: str, default: _T, kind: type[_T], low: _T, high: _T
) -> _T:
    raw = options.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ValueError(f"option {name}={raw!r} is not a {kind.__name__}") from None
    if not low <= value <= high:
        raise ValueError(f"option {name}={raw!r} is outside {low}..{high}")
    return value
