"""RUN_DIR/predictions.jsonl: one line per sample, appended as each answer comes back.

    {"id", "status", "x", "y", "box", "raw_output", "seconds"}   an answer
    {"id", "error"}                                              a sample that failed

`status` is the daemon's word for the answer (agent.proto's LocationStatus): "found"
(x, y in the image's own pixels; `box` [x1, y1, x2, y2] where the policy gave one),
"absent" (the policy says the target is not in the image), "unparseable" (its answer
could not be read as a location), "unreported" (a daemon older than the status said
only "not found"). `seconds` is the Locate call's wall time.

Each line is written whole, flushed and synced before the next sample is counted, so a
crash loses at most the answers in flight. Reading (`load`) drops a line cut short by
a crash and every error line (those samples are tried again), keeps the first line of
a sample seen twice, and rewrites the file without the dropped lines (atomically), so a
resumed run appends after clean lines only and never predicts a sample twice.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, get_args

from holodesk.client.locations import Location, LocationStatus
from holodesk.data.grounding import Answer

FILE_NAME = "predictions.jsonl"
_STATUSES: tuple[str, ...] = get_args(LocationStatus)


@dataclass(frozen=True)
class Prediction:
    """What the policy answered for one sample."""

    sample_id: str
    status: LocationStatus
    x: float | None = None
    y: float | None = None
    box: tuple[float, float, float, float] | None = None
    raw_output: str = ""
    seconds: float = 0.0

    @classmethod
    def of(cls, sample_id: str, location: Location, seconds: float) -> Prediction:
        box = location.box
        return cls(
            sample_id=sample_id,
            status=location.status,
            x=location.x,
            y=location.y,
            box=None if box is None else (box.x, box.y, box.x + box.width, box.y + box.height),
            raw_output=location.raw_output,
            seconds=round(seconds, 4),
        )

    def answer(self) -> Answer:
        """The scorer's Answer. Only the daemon's explicit "absent" is a refusal: an
        unreadable answer, or "not found" from a daemon that does not say which of the
        two it meant, is unparsed and never credited on a refusal sample."""
        if self.status == "found" and self.x is not None and self.y is not None:
            return Answer.point(self.x, self.y)
        if self.status == "absent":
            return Answer.refusal()
        return Answer.unparsed()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.sample_id,
            "status": self.status,
            "x": self.x,
            "y": self.y,
            "box": None if self.box is None else list(self.box),
            "raw_output": self.raw_output,
            "seconds": self.seconds,
        }

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> Prediction:
        """ValueError when the row is not a prediction line."""
        sample_id, status = row.get("id"), row.get("status")
        if not isinstance(sample_id, str) or status not in _STATUSES:
            raise ValueError("not a prediction line")
        x, y, box = row.get("x"), row.get("y"), row.get("box")
        if status == "found" and not (_number(x) and _number(y)):
            raise ValueError("a found answer without its point")
        if box is not None and not (
            isinstance(box, list) and len(box) == 4 and all(map(_number, box))
        ):
            raise ValueError("box is not [x1, y1, x2, y2]")
        return cls(
            sample_id=sample_id,
            status=status,
            x=float(x) if isinstance(x, (int, float)) else None,
            y=float(y) if isinstance(y, (int, float)) else None,
            box=None
            if box is None
            else (float(box[0]), float(box[1]), float(box[2]), float(box[3])),
            raw_output=str(row.get("raw_output") or ""),
            seconds=float(row["seconds"]) if _number(row.get("seconds")) else 0.0,
        )


@dataclass(frozen=True)
class Failure:
    """A sample whose Locate call failed (its image, or the daemon's refusal of it)."""

    sample_id: str
    error: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.sample_id, "error": self.error}


@dataclass(frozen=True)
class Loaded:
    predictions: dict[str, Prediction]
    failures: dict[str, Failure]
    # Lines dropped on reading: cut short, unreadable, or a sample's second line.
    dropped: int


def read(path: Path) -> Loaded:
    """Every line of the file as it is (nothing rewritten): answers and failures by
    sample id; a sample answered after failing counts as answered."""
    predictions: dict[str, Prediction] = {}
    failures: dict[str, Failure] = {}
    dropped = 0
    if not path.exists():
        return Loaded(predictions, failures, 0)
    with path.open(encoding="utf-8") as file:
        for line in file:
            try:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError("not an object")
                if "error" in row and isinstance(row.get("id"), str):
                    failures[row["id"]] = Failure(row["id"], str(row["error"]))
                    continue
                prediction = Prediction.from_json(row)
            except ValueError:
                dropped += 1  # a line cut short by a crash, or not ours
                continue
            if prediction.sample_id in predictions:
                dropped += 1
                continue
            predictions[prediction.sample_id] = prediction
    for sample_id in predictions:
        failures.pop(sample_id, None)
    return Loaded(predictions, failures, dropped)


def load(path: Path) -> Loaded:
    """The answers already in `path`, ready to append to: the file is rewritten
    (atomically) without cut-short lines, duplicates and failures, which a resumed run
    tries again. `failures` and `dropped` say what was removed."""
    loaded = read(path)
    if loaded.dropped or loaded.failures:
        temporary = path.with_name(path.name + ".tmp")
        with temporary.open("w", encoding="utf-8") as file:
            file.writelines(_line(p.to_json()) for p in loaded.predictions.values())
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    return loaded


class Appender:
    """Appends lines to a predictions file, opened at the first line (after
    `before_first`, which writes the run's manifest): a run stopped before any answer
    or failure leaves no file behind."""

    def __init__(self, path: Path, before_first: Callable[[], None]) -> None:
        self.path = path
        self._before_first = before_first
        self._file: TextIO | None = None

    def __call__(self, entry: Prediction | Failure) -> None:
        if self._file is None:
            self._before_first()
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._file = self.path.open("a", encoding="utf-8")
        append(self._file, entry)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def append(file: TextIO, entry: Prediction | Failure) -> None:
    """One whole line, flushed and synced: a crash after this keeps it."""
    file.write(_line(entry.to_json()))
    file.flush()
    os.fsync(file.fileno())


def _line(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
