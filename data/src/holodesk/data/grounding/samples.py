"""One grounding sample, the data set a reader returns, and what it left out and why.

A reader never stops a whole benchmark for one bad sample unless asked (`strict`):
each sample or file that does not match the published layout becomes a `Problem`
naming the file, the sample and what is wrong, and is left out of `Dataset.samples`,
so a run scores only what it could read and says how much it could not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from holodesk.data.grounding.targets import Target


@dataclass(frozen=True)
class ImageRef:
    """Where a sample's image is: a file, or bytes carried inside a Parquet row.

    Parquet benchmarks (GroundUI-1K, WebClick) ship their screenshots inside the table;
    the reader keeps those bytes (it has read them to check and hash them anyway), so
    `load()` never re-reads a row group. `label` names the image in messages.
    """

    path: Path | None = None
    data: bytes | None = field(default=None, repr=False)
    label: str = ""

    def __post_init__(self) -> None:
        if (self.path is None) == (self.data is None):
            raise ValueError("an ImageRef is either a file path or inline bytes, not both")

    @classmethod
    def file(cls, path: Path) -> ImageRef:
        return cls(path=path, label=str(path))

    @classmethod
    def inline(cls, data: bytes, label: str) -> ImageRef:
        return cls(data=data, label=label)

    @property
    def name(self) -> str:
        """The image as a person finds it: a file path, or `<file.parquet> row N`."""
        return self.label or (str(self.path) if self.path is not None else "<inline image>")

    def load(self) -> bytes:
        if self.data is not None:
            return self.data
        assert self.path is not None
        return self.path.read_bytes()


@dataclass(frozen=True)
class GroundingSample:
    """One instruction on one image, and the target a predicted point must fall in.

    `width` and `height` are the image's own pixel size (checked against the file by
    the reader); `target` is in those pixels. `groups` holds the benchmark's breakdown
    keys, e.g. {"platform": "mobile", "data_type": "text"}. `memberships` holds the
    breakdown keys under which one sample counts in several rows: OSWorld-G files a
    sample under every category its GUI types belong to (e.g. {"category":
    ("text_matching", "element_recognition")}), and its own script counts it in each.
    """

    id: str
    image: ImageRef
    instruction: str
    target: Target
    width: int
    height: int
    groups: Mapping[str, str] = field(default_factory=dict)
    memberships: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def values(self, key: str) -> tuple[str, ...]:
        """This sample's values for one breakdown key: one from `groups`, or several
        from `memberships`; none when the sample does not carry the key."""
        if key in self.groups:
            return (self.groups[key],)
        return tuple(self.memberships.get(key, ()))


@dataclass(frozen=True)
class Problem:
    """A file or sample that does not match its layout, and so was left out."""

    where: str
    sample_id: str | None
    what: str

    def __str__(self) -> str:
        if self.sample_id is None:
            return f"{self.where}: {self.what}"
        return f"{self.where}: sample {self.sample_id!r}: {self.what}"

    def to_json(self) -> dict[str, str | None]:
        return {"where": self.where, "sample_id": self.sample_id, "what": self.what}


class LayoutError(ValueError):
    """A data set does not match its benchmark's published layout (raised when strict,
    or when nothing at all could be read: no annotation file, wrong folder)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


@dataclass(frozen=True)
class Dataset:
    """What a reader read: the samples it could use and the problems it left out.

    `content_hash` is a sha256 over the annotation files and the image bytes as read,
    in a fixed order, so two runs on the same files get the same hash (the run
    manifest records it; `eval compare` checks it).
    """

    benchmark: str
    root: Path
    samples: tuple[GroundingSample, ...]
    problems: tuple[Problem, ...]
    content_hash: str

    def by_id(self) -> dict[str, GroundingSample]:
        return {sample.id: sample for sample in self.samples}

    @property
    def not_read(self) -> int:
        """Samples the reader left out (problems that name a sample); a missing file's
        samples cannot be counted and show only as that file's problem."""
        return sum(1 for problem in self.problems if problem.sample_id is not None)
