"""Recordings written with the real RecordingWriter, for export and report tests.

The actions and results are the dicts json_format.MessageToDict makes of the
contract's messages (preserving field names, zero values left out), as the
daemon's recorder stores them.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from PIL import Image

from holodesk.data.format import ClientInfo, Manifest, make_recording_id
from holodesk.data.writer import RecordingWriter

Json = dict[str, Any]


def png(width: int, height: int, color: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


def click(action_id: str, frame_id: str, x: float, y: float, **extra: Any) -> Json:
    return {
        "action_id": action_id,
        "frame_id": frame_id,
        "click": {"point": {"x": x, "y": y}, **extra},
    }


def type_text(action_id: str, text: str) -> Json:
    return {"action_id": action_id, "type_text": {"text": text}}


def done(action_id: str, answer: str) -> Json:
    return {"action_id": action_id, "done": {"answer": answer}}


def ok(*action_ids: str) -> list[Json]:
    return [{"action_id": i, "status": "ACTION_STATUS_OK", "duration_ms": 3} for i in action_ids]


@dataclass
class StepSpec:
    actions: list[Json]
    thought: str = ""
    # The raw completions; None: a policy without a model (no generation, no prompt).
    completions: list[Json] | None = None
    chosen: int = 0
    # The size the model saw the frame at; None: as sent.
    model_size: tuple[int, int] | None = None
    results: list[Json] | None = None
    # The frame the step was decided on.
    color: tuple[int, int, int] = (200, 200, 200)
    prompt_text: str = "Task: {task}"
    history: int = 0  # earlier frames also shown in the prompt


@dataclass
class RecordingSpec:
    session_id: str
    task: str = "fill the form"
    steps: list[StepSpec] = field(default_factory=list)
    outcome: str | None = "succeeded"
    answer: str = ""
    reason: str = ""
    reward: float | None = None
    success: bool | None = None
    policy: str = "holo2"
    dialect: str | None = "holo"
    model: str | None = "Hcompany/Holotron-12B"
    frame_size: tuple[int, int] = (320, 200)
    encoding: str = "png"
    started_at: datetime = field(default_factory=lambda: datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC))


def write_recording(root: Path, spec: RecordingSpec) -> Path:
    width, height = spec.frame_size
    manifest = Manifest(
        recording_id=make_recording_id(spec.session_id, spec.started_at),
        session_id=spec.session_id,
        task=spec.task,
        policy=spec.policy,
        dialect=spec.dialect,
        model=spec.model,
        principal="tester",
        client=ClientInfo(os="linux", backend="x11", hostname="box"),
        displays=[{"display_id": ":0", "bounds": {"width": width, "height": height}}],
        frame_spec={"max_width": width, "max_height": height, "encoding": "IMAGE_ENCODING_PNG"},
        started_at=spec.started_at,
    )
    writer = RecordingWriter.create(root, manifest)
    frame_ids: list[str] = []
    for number, step in enumerate(spec.steps, start=1):
        frame_id = f"f{number}"
        frame_ids.append(frame_id)
        writer.write_frame(
            number,
            frame_id,
            png(width, height, step.color),
            encoding=spec.encoding,
            width=width,
            height=height,
            display_id=":0",
            source={"x": 0, "y": 0, "width": width, "height": height},
        )
        message: Json = {"step": number, "actions": step.actions}
        if step.thought:
            message["thought"] = step.thought
        prompt: list[Json] | None = None
        if step.completions is not None:
            generation: Json = {"completions": step.completions, "prompt_tokens": 1234}
            if step.chosen:
                generation["chosen"] = step.chosen
            message["generation"] = generation
            model_w, model_h = step.model_size or (width, height)
            shown = frame_ids[max(0, len(frame_ids) - 1 - step.history) :]
            prompt = [
                {"role": "system", "content": [{"type": "text", "text": "You operate a desktop."}]},
                {
                    "role": "user",
                    "content": [
                        *(
                            {"type": "image", "frame_id": f, "width": model_w, "height": model_h}
                            for f in shown
                        ),
                        {"type": "text", "text": step.prompt_text.format(task=spec.task)},
                    ],
                },
            ]
        writer.write_actions(number, message, frame_id=frame_id, prompt=prompt, policy_seconds=0.5)
        results = step.results
        if results is None:
            results = ok(*(a["action_id"] for a in step.actions))
        writer.write_observation(number, results)
    if spec.outcome is not None:
        writer.finish(spec.outcome, answer=spec.answer, reason=spec.reason, steps=len(spec.steps))
    if spec.reward is not None or spec.success is not None:
        writer.add_reward(reward=spec.reward, success=spec.success, note="checker")
    writer.close()
    return writer.path


def holo_output(thought: str, action: Json) -> str:
    return json.dumps({"note": "", "thought": thought, "action": action})


def completion(text: str, logprobs: Sequence[float] | None = None, parsed: bool = True) -> Json:
    value: Json = {"text": text}
    if parsed:
        value["parsed"] = True
    if logprobs is not None:
        value["token_ids"] = list(range(100, 100 + len(logprobs)))
        # As json_format writes doubles: non-finite ones as strings.
        value["token_logprobs"] = [_json_double(v) for v in logprobs]
        value["cumulative_logprob"] = _json_double(sum(logprobs))
    return value


def _json_double(value: float) -> float | str:
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
