"""A recording's steps -> dataset rows (the model's prompt/response pairs), format-free.

Why its own module: which steps give a row, what the row holds and which images
it needs (at the size the model saw) is one job, and it does not change with the
file a dataset is written to; export.py picks the recordings and writes the rows
as JSONL or Parquet. A step's row is the prompt exactly as handed to the engine,
then the chosen completion as the assistant turn; its images are named once per
dataset (deduplicated by name) and made on demand, by the writer that needs them.
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from holodesk.data.format import ImagePart, PromptMessage, TextPart, safe_name
from holodesk.data.stepview import FrameRef, Json, LoadedRecording, StepView

IMAGES_DIR = "images"
# The manifest's principal in a recording the client kept itself (client/recording.py).
CLIENT_PRINCIPAL = "client"


@dataclass(frozen=True)
class DatasetImage:
    """One image of the dataset: its name there, and how to make it from the recording."""

    name: str
    source: FrameRef
    # Resize to this size (the model's) first; None: the recorded file as is.
    resize: tuple[int, int] | None

    def encoded(self) -> bytes:
        if self.resize is None:
            return self.source.path.read_bytes()
        buffer = io.BytesIO()
        self._resized().save(buffer, format="PNG")
        return buffer.getvalue()

    def write_into(self, directory: Path) -> bool:
        """Materialize under `directory`; False when it is already there (deduplicated)."""
        target = directory / self.name
        if target.exists():
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        if self.resize is None:
            try:
                os.link(self.source.path, target)
            except OSError:  # another file system, or no hard links there
                shutil.copyfile(self.source.path, target)
        else:
            temporary = target.with_name(f".{target.name}.tmp")
            self._resized().save(temporary, format="PNG")
            os.replace(temporary, target)
        return True

    def _resized(self) -> Image.Image:
        assert self.resize is not None
        with Image.open(self.source.path) as opened:
            image = opened.convert("RGB")
        # Bicubic, as the daemon resizes frames for the model (dialects/images.py).
        return image.resize(self.resize, Image.Resampling.BICUBIC)


@dataclass(frozen=True)
class Example:
    """One dataset row."""

    messages: list[Json]
    images: list[DatasetImage]
    columns: Json

    def row(self) -> Json:
        return {"messages": self.messages, "images": [i.name for i in self.images], **self.columns}


class _SkipStepError(Exception):
    """A step that has a prompt and a completion but cannot become a row."""


def examples(recording: LoadedRecording) -> Iterator[Example]:
    """The rows of one recording; steps without a prompt or a chosen candidate have none."""
    for step in recording.steps():
        try:
            example = _example(recording, step)
        except _SkipStepError:
            continue
        if example is not None:
            yield example


def skipped_steps(recording: LoadedRecording) -> list[tuple[int, str]]:
    """Steps with a prompt and a completion that still give no row, and why."""
    reasons: list[tuple[int, str]] = []
    for step in recording.steps():
        try:
            _example(recording, step)
        except _SkipStepError as skip:
            reasons.append((step.step, str(skip)))
    return reasons


def why_no_rows(recording: LoadedRecording) -> str:
    """Why a recording kept by the filter still gives no rows, in words for its user.

    Rows are the model's prompt/response pairs, so a session can be recorded in full
    and give none: it never got to a step, or its policy is not a model (the OCR
    baseline and scripted policies record actions, never a prompt).
    """
    steps = recording.steps()
    prompted = [step for step in steps if step.actions.prompt is not None]
    if not prompted and recording.manifest.principal == CLIENT_PRINCIPAL:
        return (
            "no rows: a client's own recording (holodesk run --record) holds no prompts; "
            "export the daemon's recording of the session (holodeskd --record on)"
        )
    if not steps:
        frames = "no frames and " if not recording.frames else ""
        return f"no rows: {frames}no actions were recorded (the session ended before a step)"
    if not prompted:
        policy = recording.manifest.policy or "?"
        return (
            f"no rows: none of its {len(steps)} step(s) recorded a prompt "
            f"(policy {policy!r} is not a model, or its engine does not report prompts)"
        )
    if all(step.chosen_completion() is None for step in prompted):
        return f"no rows: none of its {len(prompted)} prompted step(s) recorded the model's output"
    if not recording.frames:
        return "no rows: no frames were recorded for its prompts' images"
    return "no rows: every step with a prompt and an output was left out (reasons above)"


def _example(recording: LoadedRecording, step: StepView) -> Example | None:
    prompt = step.actions.prompt
    completion = step.chosen_completion()
    if prompt is None or completion is None:
        return None
    images: dict[str, DatasetImage] = {}
    messages: list[Json] = []
    for message in prompt:
        content: list[Json] = []
        for part in message.content:
            if isinstance(part, TextPart):
                content.append({"type": "text", "text": part.text})
            elif isinstance(part, ImagePart):
                image = _dataset_image(recording, part)
                images.setdefault(image.name, image)
                content.append({"type": "image", "image": image.name})
            else:
                raise _SkipStepError(f"a prompt part of unknown type {part.type!r}")
        messages.append(_with_tool_fields({"role": message.role, "content": content}, message))
    text = str(completion.get("text") or "")
    messages.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
    logprobs = _floats(completion.get("token_logprobs"))
    manifest = recording.manifest
    columns: Json = {
        "recording_id": recording.recording_id,
        "session_id": manifest.session_id,
        "step": step.step,
        "task": manifest.task,
        "outcome": recording.outcome,
        "reward": recording.reward,
        "success": recording.success,
        "policy": manifest.policy,
        "dialect": manifest.dialect,
        "model": manifest.model,
        "logprobs": logprobs,
        "token_ids": _ints(completion.get("token_ids")),
        # MessageToDict leaves out zeros: with logprobs present, a missing sum is 0.0.
        "cumulative_logprob": (
            float(completion.get("cumulative_logprob", 0.0)) if logprobs is not None else None
        ),
    }
    # The images in order of first appearance, each once.
    return Example(messages, list(images.values()), columns)


def _dataset_image(recording: LoadedRecording, part: ImagePart) -> DatasetImage:
    frame = recording.frames.get(part.frame_id)
    if frame is None:
        raise _SkipStepError(f"the prompt's frame {part.frame_id!r} was not recorded")
    seen = (part.width, part.height)
    if part.width <= 0 or part.height <= 0 or seen == (frame.width, frame.height):
        return dataset_image(recording, frame, None)
    return dataset_image(recording, frame, seen)


def dataset_image(
    recording: LoadedRecording, frame: FrameRef, resize: tuple[int, int] | None
) -> DatasetImage:
    """A recorded frame as a dataset image, resized to `resize` (None: as recorded),
    under the name every export gives it (one name per recording, frame and size)."""
    stem = _safe(f"{recording.recording_id}-{frame.path.stem}")
    if resize is None:
        return DatasetImage(f"{IMAGES_DIR}/{stem}{frame.path.suffix}", frame, None)
    return DatasetImage(f"{IMAGES_DIR}/{stem}-{resize[0]}x{resize[1]}.png", frame, resize)


def _safe(name: str) -> str:
    # Up to 240 characters: a recording id and a frame file's stem, well under the
    # 255 of most file systems.
    return safe_name(name, 240, empty="image")


def _floats(value: Any) -> list[float] | None:
    # json_format writes NaN and infinities as strings; float() reads them back.
    if not isinstance(value, list) or not value:
        return None
    return [float(v) for v in value]


def _ints(value: Any) -> list[int] | None:
    if not isinstance(value, list) or not value:
        return None
    return [int(v) for v in value]


def _with_tool_fields(entry: Json, message: PromptMessage) -> Json:
    """The message's tool calls in the OpenAI chat form trainers read
    (`tool_calls: [{id, type: function, function: {name, arguments}}]`, `tool_call_id`)."""
    if message.tool_calls:
        entry["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    if message.tool_call_id:
        entry["tool_call_id"] = message.tool_call_id
    return entry
