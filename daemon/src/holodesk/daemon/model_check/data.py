"""`--data BENCHMARK:PATH`: `--dialect auto` also judges each dialect on a grounding
data set the user points it at, scored by that benchmark's own rule.

The bundled screenshots say whether a dialect reads a model's answers at all; a few
dozen samples of the benchmark the model will be judged on say how well, on the
screens and instructions that matter. Each sample is one Locate through the same
`ModelPolicy` as the bundled trials, its answer scored by holodesk.data.grounding
(`score`: the reader's target, edges and polygons as the benchmark counts them), and
counted in the ranking's parse and click-landing rates like any other trial.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from holodesk.daemon.engines.base import EngineError
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Point, Size
from holodesk.daemon.model_check.steps import StepCheck
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.data.grounding import Answer, GroundingSample, LayoutError, Refusal, score
from holodesk.data.grounding.benchmarks import BENCHMARKS

# Samples per dialect unless --data-limit says otherwise: every dialect asks about
# each one, so the check's time grows with dialects x samples.
DEFAULT_LIMIT = 50
_AS_IS = {"PNG": ImageEncoding.PNG, "JPEG": ImageEncoding.JPEG, "WEBP": ImageEncoding.WEBP}


class DataError(ValueError):
    """--data names no benchmark, or its data set cannot be read; the message says how."""


@dataclass(frozen=True)
class DataTrials:
    benchmark: str
    path: Path
    samples: tuple[GroundingSample, ...]
    # Samples the reader left out (problems naming a sample) and files it could not read.
    problems: int


def load_data(spec: str, limit: int = DEFAULT_LIMIT) -> DataTrials:
    """`BENCHMARK:PATH` -> the data set's first `limit` samples."""
    name, sep, path = spec.partition(":")
    if not sep or not name or not path:
        raise DataError(f"--data {spec!r} is not BENCHMARK:PATH")
    benchmark = BENCHMARKS.get(name)
    if benchmark is None:
        raise DataError(f"--data: unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}")
    if limit < 1:
        raise DataError(f"--data-limit must be 1 or more, got {limit}")
    try:
        dataset = benchmark.read(Path(path))
    except (LayoutError, ImportError) as exc:
        raise DataError(f"--data {spec}: {exc}") from exc
    if not dataset.samples:
        raise DataError(f"--data {spec}: no sample could be read")
    return DataTrials(name, Path(path), dataset.samples[:limit], len(dataset.problems))


def sample_frame(sample: GroundingSample) -> EncodedFrame:
    """The sample's image as the daemon receives a frame: its own bytes and pixels (the
    target is in those), re-encoded as PNG only when it is no format engines take."""
    data = sample.image.load()
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        encoding = _AS_IS.get(image.format or "")
        if encoding is None:
            buffer = io.BytesIO()
            image.convert("RGB").save(buffer, format="PNG")
            encoding, data = ImageEncoding.PNG, buffer.getvalue()
        size = Size(*image.size)
    return EncodedFrame(f"data-{sample.id}", size, encoding, data)


async def check_sample(policy: ModelPolicy, sample: GroundingSample) -> StepCheck:
    """One Locate on the sample, judged by the benchmark's rule."""
    try:
        frame = sample_frame(sample)
    except (OSError, UnidentifiedImageError, Image.DecompressionBombError) as exc:
        return StepCheck("data", engine_error=f"cannot read {sample.image.name}: {exc}")
    try:
        (location,) = await policy.locate(frame, (sample.instruction,))
    except EngineError as exc:
        return StepCheck("data", engine_error=str(exc))
    point = location.point
    if location.found and point is not None:
        answer = Answer.point(point.x, point.y)
    elif location.absent:
        answer = Answer.refusal()
    else:
        answer = Answer.unparsed()
    verdict = score(sample, answer)
    said = "absent" if point is None else f"({point.x:.1f}, {point.y:.1f})"
    if verdict.outcome == "unparsed":
        return StepCheck(
            "data", raw_output=location.raw_output, parse_error="no location in the answer"
        )
    return StepCheck(
        "data",
        raw_output=location.raw_output,
        point=point,
        actions=f"{sample.id}: {said}",
        distance_px=_distance(sample, point),
        hit=verdict.hit,
    )


def _distance(sample: GroundingSample, point: Point | None) -> float | None:
    """Pixels from the point to the target's bounds (for the mean miss); None without
    a point or a target with bounds (a refusal)."""
    if point is None or isinstance(sample.target, Refusal):
        return None
    bounds = sample.target.bounds()
    if bounds is None:
        return None
    x1, y1, x2, y2 = bounds
    dx = max(x1 - point.x, 0.0, point.x - x2)
    dy = max(y1 - point.y, 0.0, point.y - y2)
    return math.hypot(dx, dy)
