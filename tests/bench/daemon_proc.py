"""A daemon, or a bare gRPC echo service, in a process of its own, for benchmarks.

Run by the benchmarks (never by hand, though it works):

    python -m tests.bench.daemon_proc --kind holodesk --policy instant
    python -m tests.bench.daemon_proc --kind echo

It prints ``listening on HOST:PORT`` once serving, and stops on SIGTERM or when its
standard input closes (so it never outlives the benchmark that started it).

- ``holodesk``: the real daemon (`serve()`: interceptors, auth, sessions, frame
  validation, conversion) on 127.0.0.1:0 with a policy that costs nothing:
  ``instant`` answers one click at once (the daemon's own overhead); ``model`` is a
  ModelPolicy with a ScriptedEngine that stands in for an in-process engine (the
  dialect's work on top: model images, prompt, parsing), i.e. a model that answers
  in zero time; it clicks at ``--click X,Y`` (0-1000, in turn; default the middle).
- ``echo``: the baseline. The same AgentService contract and server options, a
  bidi stream answering every message with a canned message of the same size as
  the daemon's (started / one click), and no holodesk logic at all.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from holodesk.daemon import gc_policy
from holodesk.daemon.actions import Click
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.frames import EncodedFrame, FrameSpec, ImageEncoding
from holodesk.daemon.geometry import Point, Size
from holodesk.daemon.policies.base import Decision, Location, Policy
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.listen import grpc_options as _grpc_options
from holodesk.daemon.rpc.server import serve
from holodesk.daemon.steps import StepContext
from holodesk.proto.v1 import action_pb2, agent_pb2, agent_pb2_grpc, frame_pb2, geometry_pb2
from tests.bench.common import REPO_ROOT

MODULE = "tests.bench.daemon_proc"
READY_PREFIX = "listening on "


class InstantPolicy:
    """Decides one click in the middle of the frame, at once: a model with no latency."""

    name = "instant"
    description = "one click per step, decided in zero time (benchmarks)"

    def __init__(self, history_frames: int = 3) -> None:
        self._history_frames = history_frames

    @property
    def ready(self) -> bool:
        return True

    @property
    def history_frames(self) -> int:
        return self._history_frames

    def frame_spec(
        self, accepted: tuple[ImageEncoding, ...], screen: Size | None = None
    ) -> FrameSpec:
        return FrameSpec(max_width=1920, max_height=1080, encoding=ImageEncoding.PNG)

    async def start(self) -> None:
        return None

    async def decide(self, context: StepContext) -> Decision:
        size = context.frame.size
        return Decision((Click(Point(size.width / 2, size.height / 2)),), thought="click")

    async def locate(
        self, frame: EncodedFrame, descriptions: tuple[str, ...]
    ) -> tuple[Location, ...]:
        return tuple(Location(d, found=False) for d in descriptions)

    async def abort(self, session_id: str) -> None:
        return None

    async def close(self) -> None:
        return None


def click_output(x: float = 500, y: float = 500) -> str:
    """A Holo-format click at (x, y), in the dialect's 0-1000 coordinates."""
    return json.dumps(
        {"note": "", "thought": "click", "action": {"action": "click", "x": x, "y": y}}
    )


CLICK_OUTPUT = click_output()


def scripted_engine(outputs: Sequence[str], processor_cache_items: int = 256) -> ScriptedEngine:
    """A zero-latency engine answering `outputs` in turn, for as long as a benchmark runs.

    It stands in for an in-process engine (vLLM, transformers: `processes_images`),
    whose processor resizes the images, so the daemon does not: the daemon's work
    per step is what it would be with a real model, minus the model."""
    script = [outputs[i % len(outputs)] for i in range(100_000)]
    return ScriptedEngine(
        script, processes_images=True, processor_cache_items=processor_cache_items
    )


def make_policy(
    kind: str,
    history_frames: int,
    dialect: str,
    clicks: Sequence[tuple[float, float]] = (),
    processor_cache_items: int = 256,
) -> Policy:
    if kind == "instant":
        return InstantPolicy(history_frames)
    if kind == "model":
        outputs = [click_output(x, y) for x, y in clicks] or [CLICK_OUTPUT]
        engine = scripted_engine(outputs, processor_cache_items)
        return ModelPolicy(get_dialect(dialect), engine, name="model")
    raise ValueError(f"unknown policy {kind!r}: instant or model")


def parse_click(text: str) -> tuple[float, float]:
    x, _, y = text.partition(",")
    return float(x), float(y)


# --- the baseline: a bare echo over the same contract --------------------------------------


class EchoAgentService(agent_pb2_grpc.AgentServiceServicer):
    """Answers start with a SessionStarted and each observation with one click, built
    like the daemon's (same ids, same sizes); nothing is checked or kept."""

    async def RunSession(  # noqa: N802
        self, request_iterator: AsyncIterator[agent_pb2.RunSessionRequest], context: Any
    ) -> AsyncIterator[agent_pb2.RunSessionResponse]:
        session_id = uuid.uuid4().hex
        step = 0
        async for request in request_iterator:
            kind = request.WhichOneof("event")
            if kind == "start":
                yield agent_pb2.RunSessionResponse(
                    started=agent_pb2.SessionStarted(
                        session_id=session_id,
                        resume_token=uuid.uuid4().hex + uuid.uuid4().hex[:8],
                        frame_spec=frame_pb2.FrameSpec(
                            max_width=1920,
                            max_height=1080,
                            encoding=frame_pb2.IMAGE_ENCODING_PNG,
                            quality=90,
                        ),
                        policy="echo",
                        max_steps=1_000_000,
                    )
                )
            elif kind == "observation":
                step += 1
                frame = request.observation.frame
                action = action_pb2.Action(
                    action_id=f"{session_id}-{step}",
                    frame_id=frame.frame_id,
                    click=action_pb2.ClickAction(
                        point=geometry_pb2.Point(x=frame.size.width / 2, y=frame.size.height / 2),
                        button=action_pb2.MOUSE_BUTTON_LEFT,
                        count=1,
                    ),
                )
                yield agent_pb2.RunSessionResponse(
                    actions=agent_pb2.Actions(step=step, actions=[action], thought="click")
                )

    async def Locate(  # noqa: N802
        self, request: agent_pb2.LocateRequest, context: Any
    ) -> agent_pb2.LocateResponse:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "the echo baseline only streams")
        raise AssertionError("unreachable")

    async def ReportReward(  # noqa: N802
        self, request: agent_pb2.ReportRewardRequest, context: Any
    ) -> agent_pb2.ReportRewardResponse:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "the echo baseline only streams")
        raise AssertionError("unreachable")


# --- serving -----------------------------------------------------------------------------


def server_config(max_sessions: int, decoded_screens_mb: int | None = None) -> ServerConfig:
    config = ServerConfig(
        listen="127.0.0.1:0",
        max_steps=1_000_000,
        max_sessions=max_sessions,
        max_session_s=0,
        step_timeout_s=0,
        resume_window_s=0,  # a benchmark's dropped stream is gone, not resumable
        grace_s=2.0,
    )
    if decoded_screens_mb is None:
        return config
    return dataclasses.replace(config, decoded_screen_bytes=decoded_screens_mb << 20)


async def _serve(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    _stop_when_stdin_closes(loop, stop)
    config = server_config(args.max_sessions, args.decoded_screens_mb)
    if args.kind == "echo":
        server = grpc.aio.server(options=_grpc_options(config))
        agent_pb2_grpc.add_AgentServiceServicer_to_server(EchoAgentService(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        print(f"{READY_PREFIX}127.0.0.1:{port}", flush=True)
        await stop.wait()
        await server.stop(1.0)
        return
    policy = make_policy(
        args.policy, args.history_frames, args.dialect, args.click, args.processor_cache_items
    )
    async with serve(config, policies=[policy]) as running:
        await running.policies_started
        gc_policy.settle_for_serving()  # as holodeskd does (cli.run)
        print(f"{READY_PREFIX}{running.address}", flush=True)
        await stop.wait()


def _stop_when_stdin_closes(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    def watch() -> None:
        with contextlib.suppress(OSError, ValueError):
            sys.stdin.buffer.read()
        loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=watch, name="stdin-watch", daemon=True).start()


def build_parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__)
    result.add_argument("--kind", choices=["holodesk", "echo"], default="holodesk")
    result.add_argument("--policy", choices=["instant", "model"], default="instant")
    result.add_argument("--dialect", default="holotron", help="dialect of --policy model")
    result.add_argument("--history-frames", type=int, default=3)
    result.add_argument("--max-sessions", type=int, default=4096)
    result.add_argument(
        "--decoded-screens-mb", type=int, help="the daemon's --decoded-screens-mb (its default)"
    )
    result.add_argument(
        "--processor-cache-items",
        type=int,
        default=256,
        help="screens the model policy's engine keeps processed, as vLLM's processor cache",
    )
    result.add_argument(
        "--click",
        type=parse_click,
        action="append",
        default=[],
        metavar="X,Y",
        help="where --policy model clicks, 0-1000 (repeatable: in turn; default 500,500)",
    )
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    asyncio.run(_serve(args))
    return 0


# --- the parent's side -------------------------------------------------------------------


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes]
    address: str
    label: str

    @property
    def pid(self) -> int:
        return self.process.pid


@contextlib.contextmanager
def server_process(
    kind: str,
    *,
    policy: str = "instant",
    dialect: str = "holotron",
    history_frames: int = 3,
    max_sessions: int = 4096,
    cpus: Sequence[int] | None = None,
    clicks: Sequence[tuple[float, float]] = (),
    decoded_screens_mb: int | None = None,
    processor_cache_items: int = 256,
) -> Iterator[ServerProcess]:
    """Start a server process, wait until it listens, stop it on exit.

    `cpus`: pin the server to these CPUs (taskset), so the client's own work does
    not hide the server's cost, or vice versa. `clicks`: where the model policy
    clicks, in turn (0-1000). A process that dies meanwhile (the OOM killer) is
    reaped here too; `ServerProcess.process.poll()` tells."""
    command = [
        sys.executable,
        "-m",
        MODULE,
        "--kind",
        kind,
        "--policy",
        policy,
        "--dialect",
        dialect,
        "--history-frames",
        str(history_frames),
        "--max-sessions",
        str(max_sessions),
        *(f"--click={x:g},{y:g}" for x, y in clicks),
        *([] if decoded_screens_mb is None else [f"--decoded-screens-mb={decoded_screens_mb}"]),
        f"--processor-cache-items={processor_cache_items}",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    try:
        if cpus is not None:
            os.sched_setaffinity(process.pid, set(cpus))
        assert process.stdout is not None
        line = process.stdout.readline().decode().strip()
        if not line.startswith(READY_PREFIX):
            raise RuntimeError(f"{kind} server did not start (exit {process.poll()}): {line!r}")
        label = "bare grpc.aio echo" if kind == "echo" else f"holodesk ({policy} policy)"
        yield ServerProcess(process, line[len(READY_PREFIX) :], label)
    finally:
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


if __name__ == "__main__":
    sys.exit(main())
