"""What every benchmark script shares: figures against a same-run baseline, JSON, plots.

A benchmark prints each figure next to its baseline (measured in the same run, on
the same machine, at the same time) as a ratio, with the command that reproduces
it; writes everything to ``bench-results/<name>.json``; and draws
``bench-results/<name>.png``. Targets are reported (met / missed), never asserted:
a timing is a property of the machine, not a test verdict.

Also here: percentiles, realistic screen frames (text-dense 1080p desktops, so PNG
sizes match real screenshots: ~200-300 KiB), process RSS and CPU time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import shlex
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import cache
from io import BytesIO
from pathlib import Path
from typing import Any, Literal

from PIL import Image, ImageDraw, ImageFont

from holodesk.platform.processes import stop_process

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO_ROOT / "bench-results"
# Overrides where results go (the smoke tests point it at a temporary folder).
RESULTS_ENV = "HOLODESK_BENCH_DIR"

Better = Literal["lower", "higher"]


# --- figures and reports -----------------------------------------------------------------


@dataclass
class Figure:
    """One measured value next to its baseline.

    `ratio` is value / baseline. `target` is a human-readable goal ("< 5 ms");
    `met` says whether this run reached it (None: no target, or not decidable).
    """

    name: str
    value: float
    unit: str
    baseline: float | None = None
    baseline_name: str = ""
    better: Better = "lower"
    target: str = ""
    met: bool | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline == 0 or not math.isfinite(self.baseline):
            return None
        return self.value / self.baseline

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = self.ratio
        return data


@dataclass
class Report:
    """A benchmark run: its figures, the raw series behind them, how to reproduce it."""

    name: str
    title: str
    command: str
    quick: bool = False
    figures: list[Figure] = field(default_factory=list)
    # Raw measurements (series, per-run details) for the JSON file and the plot.
    data: dict[str, Any] = field(default_factory=dict)
    started: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def add(self, figure: Figure) -> Figure:
        self.figures.append(figure)
        print(format_figure(figure), flush=True)
        return figure

    def header(self) -> None:
        print(f"== {self.title} ({self.name}){' [quick]' if self.quick else ''}", flush=True)
        print(f"   reproduce: {self.command}", flush=True)
        print(f"   machine: {machine_summary()}", flush=True)

    def summary(self) -> str:
        lines = [f"== {self.title}: summary", f"   reproduce: {self.command}"]
        lines.extend(format_figure(f) for f in self.figures)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "command": self.command,
            "quick": self.quick,
            "started": self.started,
            "machine": machine_info(),
            "figures": [f.to_json() for f in self.figures],
            "data": self.data,
        }

    def write(self, out_dir: Path | None = None) -> Path:
        """bench-results/<name>.json (pretty, stable key order)."""
        folder = results_dir(out_dir)
        path = folder / f"{self.name}.json"
        path.write_text(json.dumps(self.to_json(), indent=2, default=_json_default) + "\n")
        return path

    def finish(self, plot: Any, out_dir: Path | None = None) -> tuple[Path, Path]:
        """Print the summary, write the JSON and the plot (a matplotlib Figure)."""
        print(self.summary(), flush=True)
        json_path = self.write(out_dir)
        png_path = results_dir(out_dir) / f"{self.name}.png"
        plot.savefig(png_path, dpi=110, bbox_inches="tight")
        import matplotlib.pyplot as plt

        plt.close(plot)
        print(f"   wrote {_shown_path(json_path)} and {_shown_path(png_path)}", flush=True)
        return json_path, png_path


def format_figure(figure: Figure) -> str:
    text = f"   {figure.name:<52} {_number(figure.value)} {figure.unit}"
    if figure.baseline is not None:
        text += f"  | baseline {_number(figure.baseline)} {figure.unit} ({figure.baseline_name})"
        ratio = figure.ratio
        if ratio is not None:
            text += f"  ratio {ratio:.2f}x"
    if figure.target:
        verdict = {True: "met", False: "MISSED", None: "n/a"}[figure.met]
        text += f"  | target {figure.target}: {verdict}"
    if figure.note:
        text += f"  ({figure.note})"
    return text


def _number(value: float) -> str:
    if not math.isfinite(value):
        return str(value)
    if value == int(value) and abs(value) >= 100:
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _shown_path(path: Path) -> str:
    try:
        return str(path.relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def results_dir(out_dir: Path | None = None) -> Path:
    folder = out_dir or Path(os.environ.get(RESULTS_ENV) or RESULTS_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# --- command line --------------------------------------------------------------------------


def parser(module: str, description: str) -> argparse.ArgumentParser:
    """An argument parser with the options every benchmark has (--quick, --out)."""
    result = argparse.ArgumentParser(
        prog=f"python -m {module}",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    result.add_argument(
        "--quick",
        action="store_true",
        help="a small, fast run that exercises every code path (the smoke tests use it)",
    )
    result.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"folder for <name>.json and <name>.png (default {RESULTS_DIR.name}/, "
        f"or ${RESULTS_ENV})",
    )
    return result


def reproduce_command(module: str, argv: Sequence[str]) -> str:
    """The command line that reruns this benchmark with the same arguments."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:  # --out is where results go, not what was measured
            skip = False
            continue
        if arg == "--out":
            skip = True
            continue
        if arg.startswith("--out="):
            continue
        kept.append(arg)
    return shlex.join(["uv", "run", "python", "-m", module, *kept])


# --- statistics ----------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), linear interpolation between closest ranks."""
    if not values:
        return math.nan
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside 0..100")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    """p50/p90/p99/mean/max in milliseconds, and the sample count."""
    ms = [s * 1000 for s in seconds]
    return {
        "count": float(len(ms)),
        "p50_ms": percentile(ms, 50),
        "p90_ms": percentile(ms, 90),
        "p99_ms": percentile(ms, 99),
        "mean_ms": sum(ms) / len(ms) if ms else math.nan,
        "max_ms": max(ms) if ms else math.nan,
    }


# --- the machine and processes ---------------------------------------------------------------


@cache
def machine_info() -> dict[str, Any]:
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "cpus": os.cpu_count(),
        "cpu": platform.processor() or platform.machine(),
        "memory_gib": round(memory / 2**30, 1),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }


def machine_summary() -> str:
    info = machine_info()
    return f"{info['cpus']} CPUs, {info['memory_gib']} GiB, Python {info['python']}"


def rss_bytes(pid: int) -> int:
    """Resident memory of a process (Linux /proc; benchmarks run on Linux hosts)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far (Linux /proc)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # Fields after the command name (which may hold spaces) start at field 3.
    fields = stat[stat.rindex(")") + 2 :].split()
    user, system = int(fields[11]), int(fields[12])
    return (user + system) / os.sysconf("SC_CLK_TCK")


def child_pids(pid: int | None = None) -> list[int]:
    """Direct children of a process (default: this one), from Linux /proc."""
    parent = os.getpid() if pid is None else pid
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        if int(stat[stat.rindex(")") + 2 :].split()[1]) == parent:
            found.append(int(entry.name))
    return found


def tree_cpu_seconds(pid: int | None = None) -> float:
    """CPU time of a process (default: this one) and its direct children, so far."""
    root = os.getpid() if pid is None else pid
    total = 0.0
    for each in (root, *child_pids(root)):
        try:
            total += cpu_seconds(each)
        except OSError:
            continue
    return total


class Stopwatch:
    """Wall and (own-process) CPU time of a block."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0

    def __enter__(self) -> Stopwatch:
        self._wall = time.perf_counter()
        self._cpu = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu


# --- realistic screen frames --------------------------------------------------------------------

_WORDS = (
    "file",
    "edit",
    "view",
    "insert",
    "format",
    "tools",
    "window",
    "help",
    "open",
    "save",
    "close",
    "search",
    "settings",
    "account",
    "profile",
    "inbox",
    "drafts",
    "sent",
    "archive",
    "report",
    "quarterly",
    "revenue",
    "forecast",
    "total",
    "name",
    "date",
    "size",
    "modified",
    "status",
    "pending",
    "approved",
    "rejected",
    "invoice",
    "customer",
    "order",
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "for",
    "on",
    "with",
    "is",
    "are",
    "from",
    "by",
    "this",
    "that",
    "project",
    "meeting",
    "notes",
    "review",
    "update",
    "deploy",
    "server",
    "client",
    "session",
    "frame",
    "latency",
    "memory",
    "throughput",
)


@cache
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def desktop_image(width: int, height: int, seed: int = 0, *, dense: bool = True) -> Image.Image:
    """A synthetic desktop: a task bar, overlapping windows with title bars, toolbars,
    and lines of anti-aliased text (dense: a spreadsheet and a document filling the
    screen; sparse: one small dialog on a flat background). Deterministic per seed."""
    rng = random.Random(seed)
    image = Image.new("RGB", (width, height), (38, 70, 110) if dense else (225, 228, 232))
    draw = ImageDraw.Draw(image)
    bar = max(24, height // 36)
    draw.rectangle((0, height - bar, width, height), fill=(30, 30, 34))
    for i in range(8):
        x = 8 + i * (bar + 12)
        draw.rectangle((x, height - bar + 4, x + bar - 8, height - 6), fill=_color(rng))
    _text(draw, (width - 90, height - bar + 6), "10:42 AM", (230, 230, 230), bar // 2)
    windows = 3 if dense else 1
    for w in range(windows):
        if dense:
            left = rng.randint(0, width // 6) + w * width // 5
            top = rng.randint(0, height // 8) + w * height // 10
            right = min(width - 4, left + rng.randint(width // 2, int(width * 0.8)))
            bottom = min(height - bar - 4, top + rng.randint(height // 2, int(height * 0.8)))
        else:
            left, top = width // 3, height // 3
            right, bottom = left + width // 3, top + height // 4
        _window(draw, rng, (left, top, right, bottom), dense=dense, table=(w % 2 == 0))
    return image


def _window(
    draw: ImageDraw.ImageDraw,
    rng: random.Random,
    box: tuple[int, int, int, int],
    *,
    dense: bool,
    table: bool,
) -> None:
    left, top, right, bottom = box
    draw.rectangle(box, fill=(252, 252, 252), outline=(120, 120, 120))
    draw.rectangle((left, top, right, top + 28), fill=(235, 236, 240))
    _text(draw, (left + 10, top + 7), _sentence(rng, 4).title(), (20, 20, 20), 13)
    for i, color in enumerate(((237, 106, 94), (245, 191, 79), (98, 197, 84))):
        cx = right - 20 - i * 20
        draw.ellipse((cx - 6, top + 8, cx + 6, top + 20), fill=color)
    y = top + 34
    x = left + 8
    for _ in range(rng.randint(6, 12)):  # a toolbar of labelled buttons
        label = rng.choice(_WORDS).capitalize()
        width = 12 + 7 * len(label)
        if x + width > right - 8:
            break
        draw.rounded_rectangle(
            (x, y, x + width, y + 22), 4, fill=(245, 245, 247), outline=(200,) * 3
        )
        _text(draw, (x + 6, y + 4), label, (40, 40, 40), 12)
        x += width + 6
    y += 30
    line = 17 if dense else 20
    if table:
        columns = max(2, (right - left) // 140)
        col_width = (right - left - 16) // columns
        row = 0
        while y + line < bottom - 4:
            if row % 2:
                draw.rectangle((left + 4, y, right - 4, y + line), fill=(244, 247, 252))
            for c in range(columns):
                cell = (
                    f"{rng.randint(0, 99999):,}.{rng.randint(0, 99):02d}"
                    if c and rng.random() < 0.6
                    else _sentence(rng, rng.randint(1, 3))
                )
                _text(draw, (left + 8 + c * col_width, y + 2), cell[:18], (30, 30, 30), 12)
            y += line
            row += 1
    else:
        while y + line < bottom - 4:
            words = _sentence(rng, rng.randint(6, 18))
            if rng.random() < 0.12:
                _text(draw, (left + 12, y), words.title()[:60], (10, 10, 10), 15)
            else:
                _text(draw, (left + 12, y), words.capitalize() + ".", (40, 40, 40), 13)
            y += line if dense else line + 6
            if not dense and y > top + (bottom - top) * 2 // 3:
                break


def _text(
    draw: ImageDraw.ImageDraw, xy: tuple[int, int], text: str, fill: tuple[int, int, int], size: int
) -> None:
    draw.text(xy, text, fill=fill, font=_font(size))


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def _color(rng: random.Random) -> tuple[int, int, int]:
    return (rng.randint(60, 230), rng.randint(60, 230), rng.randint(60, 230))


def encode_image(
    image: Image.Image, fmt: str, *, quality: int = 90, lossless: bool = False
) -> bytes:
    """PNG, JPEG or WEBP bytes (WEBP lossless when asked, as screen clients send it)."""
    buffer = BytesIO()
    fmt = fmt.upper()
    if fmt == "PNG":
        image.save(buffer, format="PNG")
    elif fmt == "WEBP":
        image.save(buffer, format="WEBP", lossless=lossless, quality=quality)
    elif fmt == "JPEG":
        image.save(buffer, format="JPEG", quality=quality)
    else:
        raise ValueError(f"unknown image format {fmt!r}: PNG, JPEG or WEBP")
    return buffer.getvalue()


def desktop_frames(
    width: int,
    height: int,
    count: int,
    fmt: str = "PNG",
    *,
    dense: bool = True,
    first_seed: int = 0,
) -> list[bytes]:
    """`count` distinct encoded desktops (each a different seed)."""
    return [
        encode_image(desktop_image(width, height, first_seed + i, dense=dense), fmt, lossless=True)
        for i in range(count)
    ]


def kib(count: float) -> float:
    return count / 1024


def mib(count: float) -> float:
    return count / 2**20


def series(values: Iterable[float]) -> list[float]:
    """Rounded floats for compact JSON."""
    return [round(v, 6) for v in values]


@contextmanager
def benchmark_app(argv: Sequence[str], display: str, needs: str) -> Iterator[dict[str, Any]]:
    """A benchmark's Tk app on `display`: the JSON line it prints once shown (which
    must name `needs`), then stopped (killed past 10 s) however the benchmark ends."""
    app = subprocess.Popen(
        [sys.executable, *argv],
        env={**os.environ, "DISPLAY": display},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert app.stdout is not None
        ready = json.loads(app.stdout.readline() or "{}")
        if needs not in ready:
            raise RuntimeError(f"the benchmark app did not start on {display}")
        yield ready
    finally:
        stop_process(app, timeout_s=10.0)
