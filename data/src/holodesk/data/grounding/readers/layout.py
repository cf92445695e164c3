"""What every reader shares: problems collected or raised, fields checked, images
opened once, boxes checked against their image, and the content hash.

A reader walks its annotation records and, per record, either builds a
`GroundingSample` or raises `SampleError` with what is wrong; `Collector` turns that into a
`Problem` naming the file and the sample (or raises `LayoutError` when strict). File
level trouble (no annotation file at all) is always a `LayoutError`: there is nothing
to score.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from PIL import Image, UnidentifiedImageError

from holodesk.data.grounding.samples import (
    Dataset,
    GroundingSample,
    ImageRef,
    LayoutError,
    Problem,
)
from holodesk.data.grounding.targets import Box, Polygon

# How far a target may reach past its image's border and still be read as shipped:
# 1% of the image's side, at least one pixel. Integer annotations of an element at the
# very edge reach x2 = width, and published sets hold boxes a few pixels past the
# border, which their own harnesses score as they are (so do we). A box further out
# was drawn on another image or in other units: that is a problem, named.
EDGE_SLACK = 1.0
EDGE_SLACK_FRACTION = 0.01

# How far a normalised coordinate may stray past [0, 1] before it is taken for pixels
# (what is left past the border is then held to the slack above, in pixels).
NORMALISED_SLACK = 0.05

T = TypeVar("T", Box, Polygon)


class SampleError(Exception):
    """One sample does not match its layout; the message says what (not where)."""


@dataclass(frozen=True)
class ImageInfo:
    width: int
    height: int


class Collector:
    """Gathers a reader's samples, problems and content hash, in reading order."""

    def __init__(self, benchmark: str, root: Path, *, strict: bool) -> None:
        self.benchmark = benchmark
        self.root = root
        self.strict = strict
        self.samples: list[GroundingSample] = []
        self.problems: list[Problem] = []
        self._hash = hashlib.sha256()
        self._images: dict[str, ImageInfo | SampleError] = {}
        self._ids: set[str] = set()

    def where(self, path: Path) -> str:
        """A path as messages show it: relative to the data set's root when inside it."""
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    def problem(self, where: str, sample_id: str | None, what: str) -> None:
        found = Problem(where=where, sample_id=sample_id, what=what)
        if self.strict:
            raise LayoutError(found)
        self.problems.append(found)

    def annotation(self, path: Path) -> bytes:
        """Read an annotation file, adding it to the content hash."""
        try:
            data = path.read_bytes()
        except OSError as error:
            raise LayoutError(
                Problem(self.where(path), None, f"cannot read: {error.strerror or error}")
            ) from error
        self.digest("annotation", self.where(path), data)
        return data

    def add(self, sample: GroundingSample, where: str) -> None:
        if sample.id in self._ids:
            self.problem(where, sample.id, "duplicate sample id (the first one is kept)")
            return
        self._ids.add(sample.id)
        self.samples.append(sample)

    def image_file(self, path: Path) -> ImageInfo:
        """Open a file image once (however many samples share it): its size, or SampleError."""
        key = f"file:{path}"
        if key not in self._images:
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                self._images[key] = SampleError(f"image {self.where(path)} is missing")
            except OSError as error:
                self._images[key] = SampleError(
                    f"image {self.where(path)} cannot be read: {error.strerror or error}"
                )
            else:
                self._images[key] = self._decode(data, self.where(path))
        return _known(self._images[key])

    def image_bytes(self, data: bytes, label: str) -> ImageInfo:
        """Check an image carried inside a row (never cached: each row has its own)."""
        return _known(self._decode(data, label))

    def _decode(self, data: bytes, label: str) -> ImageInfo | SampleError:
        self.digest("image", label, data)
        try:
            with Image.open(io.BytesIO(data)) as image:
                # A truncated or corrupt file must fail here, not mid-run. PNG's verify
                # checks every chunk's CRC without inflating (50x faster than decoding
                # a 2560x1440 screenshot); other formats are decoded in full.
                if image.format == "PNG":
                    image.verify()
                else:
                    image.load()
                return ImageInfo(width=image.width, height=image.height)
        except Image.DecompressionBombError as error:
            return SampleError(f"image {label} is too large for Pillow to open safely: {error}")
        except UnidentifiedImageError:
            return SampleError(f"image {label} cannot be opened by Pillow: not an image it knows")
        except (OSError, SyntaxError, ValueError) as error:
            return SampleError(f"image {label} cannot be opened by Pillow: {error}")

    def digest(self, kind: str, name: str, data: bytes) -> None:
        """Add named content to the hash (length-prefixed, so fields cannot run together)."""
        self._hash.update(f"{kind}\0{name}\0{len(data)}\0".encode())
        self._hash.update(hashlib.sha256(data).digest())

    def dataset(self) -> Dataset:
        return Dataset(
            benchmark=self.benchmark,
            root=self.root,
            samples=tuple(self.samples),
            problems=tuple(self.problems),
            content_hash=self._hash.hexdigest(),
        )


def _known(info: ImageInfo | SampleError) -> ImageInfo:
    if isinstance(info, SampleError):
        raise SampleError(str(info))
    return info


# Field checks: each raises SampleError naming the field, what it holds and what it should.


def field(record: Mapping[str, Any], name: str) -> Any:
    if name not in record:
        raise SampleError(f"field {name!r} is missing")
    return record[name]


def text(record: Mapping[str, Any], name: str) -> str:
    value = field(record, name)
    if not isinstance(value, str):
        raise SampleError(f"field {name!r} should be a string, got {_kind(value)}")
    if not value.strip():
        raise SampleError(f"field {name!r} is empty")
    return value


def numbers(record: Mapping[str, Any], name: str, count: int | None = None) -> list[float]:
    """A list of finite numbers (booleans refused), of exactly `count` when given."""
    value = field(record, name)
    if not isinstance(value, list | tuple):
        raise SampleError(f"field {name!r} should be a list of numbers, got {_kind(value)}")
    out: list[float] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int | float):
            raise SampleError(f"field {name!r} should hold numbers, got {_kind(item)} {item!r}")
        if not math.isfinite(item):
            raise SampleError(f"field {name!r} holds a non-finite number {item!r}")
        out.append(float(item))
    if count is not None and len(out) != count:
        raise SampleError(f"field {name!r} should hold {count} numbers, got {len(out)}: {value!r}")
    return out


def number(record: Mapping[str, Any], name: str) -> float:
    value = field(record, name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SampleError(f"field {name!r} should be a number, got {_kind(value)} {value!r}")
    if not math.isfinite(value):
        raise SampleError(f"field {name!r} is not a finite number: {value!r}")
    return float(value)


def size(record: Mapping[str, Any], name: str) -> tuple[int, int]:
    """A declared [width, height] in whole pixels."""
    width, height = numbers(record, name, 2)
    if width != int(width) or height != int(height) or width <= 0 or height <= 0:
        raise SampleError(
            f"field {name!r} should be two positive whole numbers, got {[width, height]}"
        )
    return int(width), int(height)


def same_size(declared: tuple[int, int], image: ImageInfo, what: str) -> None:
    if declared != (image.width, image.height):
        raise SampleError(
            f"{what} says {declared[0]}x{declared[1]} but the image is {image.width}x{image.height}"
        )


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


# Targets, built in one place per convention and checked against their image.


def box_xywh(values: list[float], name: str, image: ImageInfo) -> Box:
    """[x, y, w, h] pixels, edges included (ScreenSpot-v2, OSWorld-G)."""
    x, y, w, h = values
    if w < 0 or h < 0:
        raise SampleError(
            f"field {name!r} = {_fmt(values)} (x,y,w,h) has a negative width or height"
        )
    return inside(Box(x, y, x + w, y + h, "inclusive"), name, values, image)


def box_corners(
    values: list[float], name: str, image: ImageInfo, *, edges: str = "inclusive"
) -> Box:
    """[x1, y1, x2, y2] (or left, top, right, bottom) pixels."""
    x1, y1, x2, y2 = values
    if x2 < x1 or y2 < y1:
        raise SampleError(f"field {name!r} = {_fmt(values)} (x1,y1,x2,y2) is inverted")
    box = Box(x1, y1, x2, y2, "strict" if edges == "strict" else "inclusive")
    return inside(box, name, values, image)


def box_normalised(values: list[float], name: str, image: ImageInfo) -> Box:
    """[x1, y1, x2, y2] as fractions of the image (WebClick), to pixels of this image.

    Values past 1 (or below 0) by more than a fraction are a pixel box read as a
    normalised one; a little past the border is held to the pixel slack of `inside`.
    """
    if any(v < -NORMALISED_SLACK or v > 1 + NORMALISED_SLACK for v in values):
        raise SampleError(f"field {name!r} = {_fmt(values)} should be normalised to [0, 1]")
    x1, y1, x2, y2 = values
    if x2 < x1 or y2 < y1:
        raise SampleError(f"field {name!r} = {_fmt(values)} (x1,y1,x2,y2) is inverted")
    w, h = image.width, image.height
    return inside(Box(x1 * w, y1 * h, x2 * w, y2 * h, "inclusive"), name, values, image)


def polygon(values: list[float], name: str, image: ImageInfo) -> Polygon:
    """A flat [x1, y1, x2, y2, ...] vertex list in pixels (OSWorld-G)."""
    if len(values) < 6 or len(values) % 2:
        raise SampleError(
            f"field {name!r} should be a flat vertex list (x, y pairs, at least 3), "
            f"got {len(values)} numbers"
        )
    shape = Polygon(tuple((values[i], values[i + 1]) for i in range(0, len(values), 2)))
    return inside(shape, name, values, image)


def inside(target: T, name: str, values: list[float], image: ImageInfo) -> T:
    """The target, unless it reaches past its image by more than the slack."""
    x1, y1, x2, y2 = target.bounds()
    slack_x = max(EDGE_SLACK, EDGE_SLACK_FRACTION * image.width)
    slack_y = max(EDGE_SLACK, EDGE_SLACK_FRACTION * image.height)
    if x1 < -slack_x or x2 > image.width + slack_x or y1 < -slack_y or y2 > image.height + slack_y:
        raise SampleError(
            f"field {name!r} = {_fmt(values)} reaches outside its "
            f"{image.width}x{image.height} image"
        )
    return target


def _fmt(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


def image_in(folder: Path, name: str) -> Path:
    """`name` (as the annotations give it) inside the image folder; a name that leaves
    the folder (absolute, or through ..) is refused rather than read from elsewhere."""
    relative = PurePosixPath(name.replace("\\", "/"))
    if relative.is_absolute() or ".." in relative.parts:
        raise SampleError(f"image path {name!r} leaves the data set's image folder")
    return folder / relative


def image_ref(path: Path) -> ImageRef:
    return ImageRef.file(path)


def json_records(collector: Collector, path: Path) -> list[Any]:
    """An annotation file that must hold a JSON list of objects; LayoutError otherwise."""
    import json

    where = collector.where(path)
    try:
        data = json.loads(collector.annotation(path))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise LayoutError(Problem(where, None, f"not valid JSON: {error}")) from error
    if not isinstance(data, list):
        raise LayoutError(
            Problem(where, None, f"should hold a JSON list of samples, got {_kind(data)}")
        )
    return data


def record_of(item: object) -> Mapping[str, Any]:
    if not isinstance(item, dict):
        raise SampleError(f"a sample should be a JSON object, got {_kind(item)}")
    return item
