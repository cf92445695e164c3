"""Batch Locate: many images, their descriptions, K requests in flight, JSONL out.

Input: a folder of images with one list of descriptions for all of them, or a
JSONL manifest of {"image": path, "descriptions": [...]} (paths relative to the
manifest's folder). Output: one JSON line per (image, description):

    {"image", "width", "height", "description", "found", "x", "y", "box", "raw_output",
     "status"}

`x`, `y` and `box` ({"x", "y", "width", "height"}) are in the image's own pixels,
null when not found (box: when the policy gives none). `status` says why not found:
"absent" (the policy says it is not in the image), "unparseable" (its answer could not
be read), "unreported" (a daemon too old to say); "found" otherwise. An image that fails gets
one line {"image", "error"} and the batch goes on. All lines of an image are
written (and synced) together, so the output is resumable: a second run skips
every image whose lines are all there, retries those that failed, and drops a
line cut short by a crash.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import grpc
import grpc.aio

from holodesk.client.locate.locate import DEFAULT_BATCH, ImageError, LoadedImage, load_image, locate
from holodesk.client.locate.refusals import FATAL_CODES, asked_again
from holodesk.client.locations import Location

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff"})


class InputError(ValueError):
    """The images or descriptions given cannot be used; the message says where."""


class DaemonError(RuntimeError):
    """The daemon refused in a way every image would hit (unreachable, not allowed ...)."""


@dataclass(frozen=True)
class Job:
    # The image as the output names it.
    image: str
    path: Path
    descriptions: tuple[str, ...]


@dataclass
class Summary:
    images: int = 0
    # Already complete in the output.
    skipped: int = 0
    located: int = 0
    failed: int = 0
    # Descriptions found / asked, over the images located in this run.
    found: int = 0
    asked: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)


# -- inputs ---------------------------------------------------------------------------


def read_descriptions(path: Path) -> tuple[str, ...]:
    """One description per line; blank lines and lines starting with # are skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read descriptions from {path}: {error}") from error
    found = tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))
    if not found:
        raise InputError(f"{path} has no descriptions (one per line)")
    return found


def jobs_from_folder(
    folder: Path, descriptions: Sequence[str], *, recursive: bool = False
) -> list[Job]:
    if not folder.is_dir():
        raise InputError(f"{folder} is not a folder")
    paths = folder.rglob("*") if recursive else folder.iterdir()
    images = sorted(p for p in paths if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    if not images:
        raise InputError(f"{folder} has no images ({', '.join(sorted(IMAGE_SUFFIXES))})")
    return [Job(str(p), p, tuple(descriptions)) for p in images]


def jobs_from_manifest(manifest: Path) -> list[Job]:
    try:
        lines = manifest.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read {manifest}: {error}") from error
    jobs: dict[str, Job] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{manifest}:{number}"
        try:
            entry = json.loads(line)
        except ValueError as error:
            raise InputError(f"{where}: not JSON: {error}") from None
        if not isinstance(entry, dict):
            raise InputError(f"{where}: expected an object with image and descriptions")
        image, descriptions = entry.get("image"), entry.get("descriptions")
        if not isinstance(image, str) or not image:
            raise InputError(f'{where}: "image" must be a path')
        if (
            not isinstance(descriptions, list)
            or not descriptions
            or not all(isinstance(d, str) and d.strip() for d in descriptions)
        ):
            raise InputError(f'{where}: "descriptions" must be a list of non-empty strings')
        if image in jobs:
            raise InputError(f"{where}: {image} is listed twice")
        path = Path(image) if Path(image).is_absolute() else manifest.parent / image
        jobs[image] = Job(image, path, tuple(d.strip() for d in descriptions))
    if not jobs:
        raise InputError(f"{manifest} lists no images")
    return list(jobs.values())


# -- output ---------------------------------------------------------------------------


def location_rows(
    image: LoadedImage, key: str, locations: Iterable[Location]
) -> list[dict[str, Any]]:
    rows = []
    for location in locations:
        box = location.box
        rows.append(
            {
                "image": key,
                "width": image.width,
                "height": image.height,
                "description": location.description,
                "found": location.found,
                "x": location.x,
                "y": location.y,
                "box": (
                    None
                    if box is None
                    else {"x": box.x, "y": box.y, "width": box.width, "height": box.height}
                ),
                "raw_output": location.raw_output,
                "status": location.status,
            }
        )
    return rows


def prepare_output(out: Path, jobs: Sequence[Job]) -> set[str]:
    """The images already complete in `out`; rewrites it without failed, incomplete or
    cut-short lines (atomically) when it has any."""
    if not out.exists():
        return set()
    wanted = {job.image: set(job.descriptions) for job in jobs}
    rows: list[dict[str, Any]] = []
    dropped = False
    with out.open(encoding="utf-8") as file:
        for line in file:
            try:
                row = json.loads(line)
            except ValueError:
                dropped = True  # a line cut short by a crash
                continue
            if not isinstance(row, dict) or not isinstance(row.get("image"), str):
                dropped = True
                continue
            if "error" in row:
                dropped = True  # failed: tried again
                continue
            rows.append(row)
    described: dict[str, set[str]] = {}
    for row in rows:
        described.setdefault(row["image"], set()).add(str(row.get("description")))
    done = {image for image, have in described.items() if wanted.get(image, set()) <= have}
    kept = [row for row in rows if row["image"] in done]
    if dropped or len(kept) != len(rows):
        temporary = out.with_name(out.name + ".tmp")
        with temporary.open("w", encoding="utf-8") as file:
            file.writelines(_line(row) for row in kept)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, out)
    return done & set(wanted)


def _line(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


def _append(file: TextIO, rows: Sequence[dict[str, Any]]) -> None:
    # One write per image: resuming sees all of an image's lines or none.
    file.write("".join(_line(row) for row in rows))
    file.flush()
    os.fsync(file.fileno())


# -- the batch ------------------------------------------------------------------------


async def run_batch(
    channel: grpc.aio.Channel,
    jobs: Sequence[Job],
    out: Path,
    *,
    concurrency: int = 4,
    policy: str = "",
    batch: int = DEFAULT_BATCH,
    timeout_s: float | None = None,
    on_image: Callable[[Job, str | None], None] | None = None,
    on_start: Callable[[Summary], None] | None = None,
) -> Summary:
    """Locate every job not already in `out`, `concurrency` images at a time.

    `on_image(job, error)` after each image (error None when it went well);
    `on_start(summary)` once the images already in `out` are counted (a progress bar
    starts from them).
    DaemonError when the daemon refuses in a way every image would hit.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be 1 or more, got {concurrency}")
    done = prepare_output(out, jobs)
    summary = Summary(images=len(jobs), skipped=sum(job.image in done for job in jobs))
    if on_start is not None:
        on_start(summary)
    todo: asyncio.Queue[Job] = asyncio.Queue()
    for job in jobs:
        if job.image not in done:
            todo.put_nowait(job)
    with out.open("a", encoding="utf-8") as file:

        async def worker() -> None:
            while not todo.empty():
                job = todo.get_nowait()
                error = await _one(channel, job, file, summary, policy, batch, timeout_s)
                if on_image is not None:
                    on_image(job, error)

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(concurrency, todo.qsize())):
                    group.create_task(worker())
        except* DaemonError as failures:
            raise failures.exceptions[0] from None
    return summary


async def _one(
    channel: grpc.aio.Channel,
    job: Job,
    file: TextIO,
    summary: Summary,
    policy: str,
    batch: int,
    timeout_s: float | None,
) -> str | None:
    try:
        image = await asyncio.to_thread(load_image, job.path)
        locations = await asked_again(
            lambda: locate(
                channel, image, job.descriptions, policy=policy, batch=batch, timeout_s=timeout_s
            )
        )
    except grpc.aio.AioRpcError as error:
        code = error.code()
        message = f"{code.name if code is not None else 'UNKNOWN'}: {error.details()}"
        if code in FATAL_CODES:
            raise DaemonError(f"the daemon refused {job.image}: {message}") from error
        return _failed(file, summary, job, message)
    except (ImageError, ValueError) as error:
        return _failed(file, summary, job, str(error))
    _append(file, location_rows(image, job.image, locations))
    summary.located += 1
    summary.asked += len(locations)
    summary.found += sum(location.found for location in locations)
    return None


def _failed(file: TextIO, summary: Summary, job: Job, message: str) -> str:
    _append(file, [{"image": job.image, "error": message}])
    summary.failed += 1
    summary.errors.append((job.image, message))
    return message
