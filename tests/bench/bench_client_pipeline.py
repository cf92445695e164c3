"""Client pipeline: capture -> resize -> encode -> bytes ready, against OSWorld's.

    uv run python -m tests.bench.bench_client_pipeline            # full run, ~10 min
    uv run python -m tests.bench.bench_client_pipeline --quick    # smoke run, ~30 s

On a private Xvfb at 1280x800, 1920x1080 and 3840x2160, a full-screen Tk window
(tests/bench/pipeline_app.py) shows either dense text (an editor, a mail client)
or a sparse form. Measured in the same run, on the same screen:

- baseline, the pipeline of OSWorld-style controllers: a full-screen grab
  (Pillow's ImageGrab, what pyautogui uses) saved as a full-size PNG (Pillow's
  defaults), every step;
- holodesk: the real client (FrameCapturer on the X11 backend) with the FrameSpec
  the daemon really sends, for two policies: the default model's (holotron: PNG,
  the box of the model's tile grid, or the screen as it is when barely larger) and
  the OCR policy's (PNG, 1920 px box).
  Per frame: a stream's first (full) frame, an unchanged screen (a delta with no
  patches), and a keystroke (a delta with patches). Deltas are on by default.

Over a 20-step session of small realistic changes (click into a field, type a
word, hover a button, open and close a dialog, idle steps): bytes per step on the
wire (the serialized Frame message) against a full PNG per step; each frame also
goes through the daemon's rebuild, which must give back exactly the client's
full downsized frame (PNG spec; for JPEG the rule is "exact where changed").
Legibility: Tesseract (the OCR policy's reader) on the frame as sent, against the
same reader on the full-resolution screen: the words recovered.

Targets (issue 9): >= 5x faster per frame; >= 10x fewer bytes per step over 20
steps; text still legible at model resolution. Reported, never asserted.
"""

from __future__ import annotations

import asyncio
import io
import statistics
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageGrab

from holodesk.client import convert as client_convert
from holodesk.client.capture import FrameCapturer, downsize, fit_size
from holodesk.client.frames import FrameSpec, SentFrame
from holodesk.daemon import convert as daemon_convert
from holodesk.daemon import frame_pixels
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.frames import EncodedFrame, FrameLimits, ImageEncoding
from holodesk.daemon.geometry import Size
from holodesk.daemon.policies.ocr.policy import OcrPolicy
from holodesk.daemon.policies.ocr.reader import ReaderConfig, read_text
from holodesk.daemon.policies.ocr.tesseract import TesseractConfig
from holodesk.daemon.session import frame_deltas
from holodesk.platform.base import Backend, DisplayInfo, Grab, Region, ScreenSource
from holodesk.platform.select import open_backend
from holodesk.proto.v1 import frame_pb2
from tests.bench.common import (
    Figure,
    Report,
    benchmark_app,
    kib,
    parser,
    reproduce_command,
    series,
)
from tests.support.xvfb import xvfb

NAME = "bench_client_pipeline"
MODULE = f"tests.bench.{NAME}"
APP = Path(__file__).with_name("pipeline_app.py")
SIZES = ((1280, 800), (1920, 1080), (3840, 2160))
KINDS = ("dense", "sparse")
# Time for Tk to repaint after an input event (a benchmark may sleep; tests may not).
SETTLE_S = 0.15
LIMITS = FrameLimits(max_bytes=64 << 20, max_pixels=40_000_000)
OCR = ReaderConfig(tesseract=TesseractConfig(timeout_s=300.0))


def build_parser() -> Any:
    result = parser(MODULE, __doc__ or "")
    result.add_argument("--frames", type=int, default=15, help="timed frames per measurement")
    result.add_argument("--steps", type=int, default=20, help="steps of the session")
    result.add_argument(
        "--sizes",
        nargs="+",
        default=[f"{w}x{h}" for w, h in SIZES],
        help="screen sizes, WIDTHxHEIGHT",
    )
    result.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    result.add_argument("--no-ocr", action="store_true", help="skip the legibility check")
    return result


# --- the screen ----------------------------------------------------------------------------


class RecordingScreen(ScreenSource):
    """The X11 screen source, keeping the last grab: the truth a frame is checked against."""

    def __init__(self, inner: ScreenSource) -> None:
        self.inner = inner
        self.last: Image.Image | None = None

    def displays(self) -> list[DisplayInfo]:
        return self.inner.displays()

    def grab(self, region: Region) -> Image.Image:
        self.last = self.inner.grab(region)
        return self.last

    def grab_since(self, region: Region, previous: Grab | None = None) -> Grab:
        grab = self.inner.grab_since(region, previous)
        self.last = grab.image
        return grab

    def virtual_desktop(self) -> Region:
        return self.inner.virtual_desktop()

    def close(self) -> None:
        self.inner.close()


@dataclass
class Desktop:
    display: str
    width: int
    height: int
    kind: str
    backend: Backend
    screen: RecordingScreen
    entry: tuple[int, int]
    button: tuple[int, int]
    words: list[str]

    def settle(self) -> None:
        time.sleep(SETTLE_S)


@contextmanager
def desktop(width: int, height: int, kind: str) -> Iterator[Desktop]:
    """Xvfb at this size with the benchmark's Tk window, and the X11 backend on it."""
    with xvfb(width, height) as display, tempfile.TemporaryDirectory() as folder:
        words_path = Path(folder) / "words.txt"
        argv = [str(APP), kind, str(words_path)]
        with benchmark_app(argv, display, "entry") as ready:
            backend = open_backend("x11", display=display)
            screen = RecordingScreen(backend.screen)
            try:
                time.sleep(0.5)  # the first paint of a large Text widget
                yield Desktop(
                    display,
                    width,
                    height,
                    kind,
                    replace(backend, screen=screen),
                    screen,
                    tuple(ready["entry"]),
                    tuple(ready["button"]),
                    words_path.read_text(encoding="utf-8").split(),
                )
            finally:
                backend.close()


def specs(width: int, height: int) -> dict[str, FrameSpec]:
    """The FrameSpecs the daemon sends for this screen, as the client receives them."""
    screen = Size(width, height)
    accepted = tuple(ImageEncoding)
    chosen = {
        "holotron": get_dialect("holotron").frame_spec(accepted, screen),
        "ocr": OcrPolicy().frame_spec(accepted, screen),
    }
    return {
        name: client_convert.frame_spec_from_pb(
            daemon_convert.frame_spec_to_pb(replace(spec, accept_deltas=True))
        )
        for name, spec in chosen.items()
    }


def describe(spec: FrameSpec, width: int, height: int) -> str:
    w, h = fit_size(width, height, spec.max_width, spec.max_height)
    quality = f" q{spec.quality}" if spec.encoding.value != "png" else ""
    return f"{w}x{h} {spec.encoding.value}{quality}"


# --- one frame ----------------------------------------------------------------------------


def osworld_frame(display: str) -> bytes:
    """OSWorld-style: grab the whole screen, save it as a full-size PNG."""
    image = ImageGrab.grab(xdisplay=display)
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def timed(function: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def wire_size(frame: SentFrame) -> int:
    """Bytes of the Frame message as it goes on the wire (ids and geometry included)."""
    return len(client_convert.frame_to_pb(frame).SerializeToString())


def per_frame(desk: Desktop, spec: FrameSpec, count: int) -> dict[str, Any]:
    """Median seconds and bytes per frame: baseline, full frame, unchanged, keystroke."""
    times: dict[str, list[float]] = {"baseline": [], "full": [], "unchanged": [], "typing": []}
    sizes: dict[str, list[int]] = {key: [] for key in times}
    full = FrameCapturer(desk.backend.screen, replace(spec, accept_deltas=False))
    deltas = FrameCapturer(desk.backend.screen, spec)
    deltas.capture()  # a stream's first frame is full; the rest build on it
    for _ in range(count):  # interleaved: load on the machine hits all alike
        seconds, data = timed(lambda: osworld_frame(desk.display))
        times["baseline"].append(seconds)
        sizes["baseline"].append(len(data))
        seconds, frame = timed(full.capture)
        times["full"].append(seconds)
        sizes["full"].append(wire_size(frame))
        seconds, frame = timed(deltas.capture)
        times["unchanged"].append(seconds)
        sizes["unchanged"].append(wire_size(frame))
    desk.backend.input.click(*desk.entry)
    desk.settle()
    deltas.capture()
    for index in range(count):
        desk.backend.input.type_text("abcdefghij"[index % 10])
        desk.settle()
        seconds, frame = timed(deltas.capture)
        times["typing"].append(seconds)
        sizes["typing"].append(wire_size(frame))
    desk.backend.input.key_chord(["end"])  # leave the field empty again
    for _ in range(count):
        desk.backend.input.key_chord(["backspace"])
    return {
        "median_ms": {key: 1000 * statistics.median(values) for key, values in times.items()},
        "median_bytes": {key: statistics.median(values) for key, values in sizes.items()},
        "series_ms": {key: series(1000 * v for v in values) for key, values in times.items()},
    }


# --- a session ------------------------------------------------------------------------------


def session_actions(desk: Desktop, steps: int) -> list[tuple[str, Callable[[], None]]]:
    """Realistic small changes: focus a field, type, hover, a dialog, idle steps."""
    inputs = desk.backend.input
    away = (desk.width // 2, desk.height - 40)

    def typing(text: str) -> Callable[[], None]:
        return lambda: inputs.type_text(text)

    plan: list[tuple[str, Callable[[], None]]] = [
        ("click into the field", lambda: inputs.click(*desk.entry)),
        *[(f"type {c!r}", typing(c)) for c in "report"],
        ("hover the button", lambda: inputs.move(*desk.button)),
        ("move away", lambda: inputs.move(*away)),
        ("open a dialog", lambda: inputs.key_chord(["ctrl", "d"])),
        ("idle", lambda: None),
        ("move over the dialog", lambda: inputs.move(desk.width // 2, desk.height // 2)),
        ("close the dialog", lambda: inputs.key_chord(["escape"])),
        *[(f"type {c!r}", typing(c)) for c in " budget"],
    ]
    while len(plan) < steps:
        plan.append(("idle", lambda: None))
    return plan[:steps]


class DaemonSide:
    """The daemon's half of a stream: frames off the wire, deltas rebuilt."""

    def __init__(self) -> None:
        self.held: deque[EncodedFrame] = deque(maxlen=3)
        self.rebuild_seconds: list[float] = []

    def receive(self, frame: SentFrame) -> EncodedFrame:
        wire = frame_pb2.Frame.FromString(client_convert.frame_to_pb(frame).SerializeToString())
        if wire.base_frame_id:
            delta = daemon_convert.frame_delta_from_pb(wire, "frame")
            start = time.perf_counter()
            rebuilt = asyncio.run(frame_deltas.resolve(delta, self.held, LIMITS, "frame"))
            if delta.patches:
                self.rebuild_seconds.append(time.perf_counter() - start)
        else:
            rebuilt = daemon_convert.frame_from_pb(wire, "frame")
        self.held.append(rebuilt)
        return rebuilt


@dataclass
class SessionResult:
    spec: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    exact: int = 0
    checked: int = 0
    rebuild_ms: list[float] = field(default_factory=list)

    def mean(self, key: str) -> float:
        return statistics.fmean(step[key] for step in self.steps)


def session(desk: Desktop, chosen: dict[str, FrameSpec], steps: int) -> dict[str, SessionResult]:
    capturers = {name: FrameCapturer(desk.backend.screen, spec) for name, spec in chosen.items()}
    daemons = {name: DaemonSide() for name in chosen}
    results = {name: SessionResult(name) for name in chosen}
    plan: list[tuple[str, Callable[[], None]]] = [
        ("first frame", lambda: None),
        *session_actions(desk, steps),
    ]
    for index, (label, action) in enumerate(plan):
        action()
        desk.settle()
        baseline_s, baseline = timed(lambda: osworld_frame(desk.display))
        # The first capture after the baseline finds the caches cold and the X server
        # still closing the baseline's connection: each spec takes its turn first.
        names = list(capturers)
        for name in names[index % len(names) :] + names[: index % len(names)]:
            capturer = capturers[name]
            seconds, frame = timed(capturer.capture)
            truth = desk.screen.last
            assert truth is not None
            rebuilt = daemons[name].receive(frame)
            result = results[name]
            kind = "full" if not frame.is_delta else "patches" if frame.patches else "unchanged"
            result.steps.append(
                {
                    "step": index,
                    "action": label,
                    "kind": kind,
                    "patches": len(frame.patches),
                    "bytes": wire_size(frame),
                    "baseline_bytes": len(baseline),
                    "ms": 1000 * seconds,
                    "baseline_ms": 1000 * baseline_s,
                }
            )
            spec = chosen[name]
            if spec.encoding.value == "png":  # lossless: the rebuilt frame must be exact
                result.checked += 1
                expected = np.asarray(downsize(truth.convert("RGB"), (frame.width, frame.height)))
                shown = np.asarray(frame_pixels.decode(rebuilt).convert("RGB"))
                result.exact += np.array_equal(shown, expected)
    for name, result in results.items():
        result.rebuild_ms = [1000 * s for s in daemons[name].rebuild_seconds]
    return results


# --- the daemon's rebuild: which lossless encoding ------------------------------------------


def rebuild_encodings(frame: Image.Image) -> dict[str, dict[str, float]]:
    """Encode ms, decode ms and KiB of a rebuilt frame: as the daemon stores it
    (frame_pixels.encode_lossless: indexed PNG when exact, else WebP lossless) and as
    WebP lossless and RGB PNG level 1."""
    choices: dict[str, Callable[[io.BytesIO], object]] = {
        "daemon": lambda buffer: buffer.write(frame_pixels.encode_lossless(frame)[1]),
        "png-1": lambda buffer: frame.save(buffer, "PNG", compress_level=1),
        "webp-lossless-m0": lambda buffer: frame.save(
            buffer, "WEBP", lossless=True, method=0, quality=0
        ),
    }
    results: dict[str, dict[str, float]] = {}
    for name, save in choices.items():
        encode_s, decode_s, size = [], [], 0
        for _ in range(3):
            start = time.perf_counter()
            buffer = io.BytesIO()
            save(buffer)
            encode_s.append(time.perf_counter() - start)
            data = buffer.getvalue()
            size = len(data)
            start = time.perf_counter()
            with Image.open(io.BytesIO(data)) as image:
                image.convert("RGB")
            decode_s.append(time.perf_counter() - start)
        results[name] = {
            "encode_ms": 1000 * statistics.median(encode_s),
            "decode_ms": 1000 * statistics.median(decode_s),
            "kib": kib(size),
        }
    return results


# --- legibility ------------------------------------------------------------------------------


def words_of(image: Image.Image) -> Counter[str]:
    return Counter(
        word
        for box in read_text(image, OCR)
        if (word := "".join(c for c in box.text.lower() if c.isalpha()))
    )


def legibility(desk: Desktop, spec: FrameSpec) -> dict[str, Any]:
    """Words OCR recovers from the frame as sent, against the full-resolution screen.

    A quarter of the screen (top left, where the text starts) keeps Tesseract's
    time bounded at 4K; the frame's matching region is read at its own resolution.
    """
    frame = FrameCapturer(desk.backend.screen, replace(spec, accept_deltas=False)).capture()
    truth = desk.screen.last
    assert truth is not None
    with Image.open(io.BytesIO(frame.data)) as image:
        sent = image.convert("RGB")
    crop = (0, 0, desk.width // 2, desk.height // 2)
    scale_x, scale_y = frame.width / desk.width, frame.height / desk.height
    small = sent.crop((0, 0, round(crop[2] * scale_x), round(crop[3] * scale_y)))
    full_words = words_of(truth.convert("RGB").crop(crop))
    small_words = words_of(small)
    vocabulary = set(desk.words)
    return {
        "full_words": sum(full_words.values()),
        "sent_words": sum(small_words.values()),
        "recovered": sum((full_words & small_words).values()),
        "full_real": sum(n for w, n in full_words.items() if w in vocabulary),
        "sent_real": sum(n for w, n in small_words.items() if w in vocabulary),
        "frame": f"{frame.width}x{frame.height}",
    }


# --- the run -------------------------------------------------------------------------------


def faster(value_ms: float, baseline_ms: float) -> bool:
    return value_ms * 5 <= baseline_ms


def measure(args: Any, report: Report) -> dict[str, Any]:
    runs: dict[str, Any] = {}
    for size_text in args.sizes:
        width, height = (int(v) for v in size_text.lower().split("x"))
        chosen = specs(width, height)
        for kind in args.kinds:
            label = f"{width}x{height} {kind}"
            print(f"-- {label}", flush=True)
            run: dict[str, Any] = {"specs": {}, "per_frame": {}, "session": {}}
            with desktop(width, height, kind) as desk:
                for name, spec in chosen.items():
                    run["specs"][name] = describe(spec, width, height)
                    run["per_frame"][name] = per_frame(desk, spec, args.frames)
                    add_frame_figures(
                        report, label, name, run["specs"][name], run["per_frame"][name]
                    )
                results = session(desk, chosen, args.steps)
                for name, result in results.items():
                    run["session"][name] = {
                        "steps": result.steps,
                        "exact": result.exact,
                        "checked": result.checked,
                        "rebuild_ms": series(result.rebuild_ms),
                    }
                    add_session_figures(report, label, name, result)
                frame = desk.screen.last
                assert frame is not None
                holotron = chosen["holotron"]
                size = fit_size(width, height, holotron.max_width, holotron.max_height)
                shown = downsize(frame.convert("RGB"), size)
                run["rebuild_encodings"] = rebuild_encodings(shown)
                if not (args.quick or args.no_ocr):
                    run["legibility"] = legibility(desk, chosen["holotron"])
                    add_legibility_figure(report, label, run["legibility"])
            runs[label] = run
    return runs


def add_frame_figures(
    report: Report, label: str, spec: str, sent: str, run: dict[str, Any]
) -> None:
    ms = run["median_ms"]
    size = run["median_bytes"]
    base = ms["baseline"]
    for key, what in (
        ("full", "a stream's first frame (full)"),
        ("unchanged", "unchanged screen (delta)"),
        ("typing", "one keystroke (delta)"),
    ):
        report.add(
            Figure(
                f"{label}, {spec} ({sent}): ms per frame, {what}",
                ms[key],
                "ms",
                baseline=base,
                baseline_name="grab + full-size PNG",
                target="<= 0.2x (5x faster)",
                met=faster(ms[key], base),
                note=f"{kib(size[key]):.1f} KiB vs {kib(size['baseline']):.0f} KiB",
            )
        )


def add_session_figures(report: Report, label: str, spec: str, result: SessionResult) -> None:
    steps = len(result.steps)
    ours, theirs = result.mean("bytes"), result.mean("baseline_bytes")
    kinds = Counter(step["kind"] for step in result.steps)
    report.add(
        Figure(
            f"{label}, {spec}: KiB per step over {steps} steps",
            kib(ours),
            "KiB",
            baseline=kib(theirs),
            baseline_name="full-size PNG every step",
            target="<= 0.1x (10x fewer)",
            met=ours * 10 <= theirs,
            note=", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
            + (f"; rebuilt exactly {result.exact}/{result.checked}" if result.checked else ""),
        )
    )
    report.add(
        Figure(
            f"{label}, {spec}: ms per step over {steps} steps (mean)",
            result.mean("ms"),
            "ms",
            baseline=result.mean("baseline_ms"),
            baseline_name="grab + full-size PNG",
            target="<= 0.2x (5x faster)",
            met=faster(result.mean("ms"), result.mean("baseline_ms")),
        )
    )
    if result.rebuild_ms:
        report.add(
            Figure(
                f"{label}, {spec}: daemon rebuild ms per step with patches",
                statistics.median(result.rebuild_ms),
                "ms",
                note="decode base + paint + lossless encode, in a worker thread",
            )
        )


def add_legibility_figure(report: Report, label: str, result: dict[str, Any]) -> None:
    report.add(
        Figure(
            f"{label}, holotron ({result['frame']}): OCR words recovered from the frame",
            result["recovered"],
            "words",
            baseline=result["full_words"],
            baseline_name="OCR of the full-resolution screen",
            better="higher",
            note=f"real words read: {result['sent_real']} sent vs {result['full_real']} full",
        )
    )


def add_encoding_figures(report: Report, runs: dict[str, Any]) -> None:
    """How the daemon encodes a rebuilt frame when it must stand alone (a long chain of
    patches, a recording: frame_pixels.py), against the alternatives."""
    for label, run in runs.items():
        choice = run["rebuild_encodings"]
        ours = choice["daemon"]
        for other, name in (("webp-lossless-m0", "WebP lossless m0"), ("png-1", "RGB PNG level 1")):
            theirs = choice[other]
            report.add(
                Figure(
                    f"{label}: rebuilt frame as the daemon stores it, encode+decode ms",
                    ours["encode_ms"] + ours["decode_ms"],
                    "ms",
                    baseline=theirs["encode_ms"] + theirs["decode_ms"],
                    baseline_name=name,
                    note=f"{ours['kib']:.0f} KiB vs {theirs['kib']:.0f} KiB",
                )
            )


def plot(runs: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (speed, volume) = plt.subplots(1, 2, figsize=(15, 5.5))
    labels = list(runs)
    keys = [
        ("baseline", "grab + PNG (baseline)"),
        ("full", "first frame"),
        ("unchanged", "unchanged (delta)"),
        ("typing", "keystroke (delta)"),
    ]
    spec = "holotron"
    width = 0.2
    for offset, (key, name) in enumerate(keys):
        values = [runs[label]["per_frame"][spec]["median_ms"][key] for label in labels]
        speed.bar(
            [i + (offset - 1.5) * width for i in range(len(labels))], values, width, label=name
        )
    speed.set_yscale("log")
    speed.set_xticks(range(len(labels)), labels, rotation=20, ha="right")
    speed.set_ylabel("ms per frame (median, log scale)")
    speed.set_title("Per frame: holodesk (holotron spec) vs OSWorld-style grab + PNG")
    speed.legend()
    for label in labels:
        steps = runs[label]["session"][spec]["steps"]
        line = volume.plot(
            [s["step"] for s in steps], [kib(s["bytes"]) for s in steps], marker="o", label=label
        )
        volume.plot(
            [s["step"] for s in steps],
            [kib(s["baseline_bytes"]) for s in steps],
            linestyle="--",
            color=line[0].get_color(),
        )
    volume.set_yscale("log")
    volume.set_xlabel("step (dashed: full PNG every step)")
    volume.set_ylabel("KiB sent (log scale)")
    volume.set_title("Bytes per step over a session (holotron spec)")
    volume.legend(fontsize=8)
    figure.tight_layout()
    return figure


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(arguments)
    if args.quick:
        args.frames, args.steps, args.sizes, args.kinds = 2, 6, ["1280x800"], ["dense"]
    report = Report(NAME, "client pipeline", reproduce_command(MODULE, arguments), args.quick)
    report.header()
    runs = measure(args, report)
    add_encoding_figures(report, runs)
    report.data["runs"] = runs
    report.finish(plot(runs), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
