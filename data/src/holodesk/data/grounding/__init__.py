"""Grounding benchmarks: readers for each published layout, one scoring rule, summaries.

- `targets`: Box (inclusive or strict edges), Polygon (ray casting, edges inside),
  Refusal (nothing inside); all in the pixels of the sample's own image.
- `samples`: GroundingSample, ImageRef, Problem, LayoutError, Dataset.
- `readers/<benchmark>.py`: `read(path, *, strict=False) -> Dataset`, one per benchmark.
  Every box conversion (x,y,w,h; x1..y2; normalised; edges) happens there and only there.
- `scoring`: Answer and `score(sample, answer) -> Verdict`.
- `benchmarks`: BENCHMARKS, each benchmark's reader, breakdowns, interval and the
  model card's figure.
- `summary`: accuracy with its 95% interval, the official breakdown, the unparsed rate,
  and how many samples were left out.

Additions to the agreed API (nothing renamed):
- `GroundingSample.memberships` and `.values(key)`: OSWorld-G files one sample under
  several categories (its own script counts it in each), which a str-valued `groups`
  cannot say; breakdowns read a key through `values()`.
- `Answer.point/refusal/unparsed`, `ImageRef.file/inline`, `Target.bounds()/to_json()`,
  `Problem.to_json()`, `Dataset.by_id()`, `Dataset.not_read`, `scoring.OUTCOMES`,
  `Benchmark.read()` and `Benchmark.layout`; `summarise(..., not_read=, seed=,
  resamples=)`, `Summary.table()`.
"""

from holodesk.data.grounding.samples import (
    Dataset,
    GroundingSample,
    ImageRef,
    LayoutError,
    Problem,
)
from holodesk.data.grounding.scoring import Answer, Verdict, score
from holodesk.data.grounding.targets import Box, Polygon, Refusal, Target

__all__ = [
    "Answer",
    "Box",
    "Dataset",
    "GroundingSample",
    "ImageRef",
    "LayoutError",
    "Polygon",
    "Problem",
    "Refusal",
    "Target",
    "Verdict",
    "score",
]
