"""The client side of benchmark sessions: raw RunSession streams, driven step by step.

Each `BenchSession` does what a holodesk client does on the wire (start, then
observation -> actions, answering every action with an OK result and a fresh
frame id) with pre-encoded frames, so the client spends as little CPU as it can:
what is measured is the server's answer time.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import grpc

from holodesk.proto.v1 import action_pb2, agent_pb2, agent_pb2_grpc, frame_pb2, geometry_pb2

# Hang guard for one message (never a timing assertion).
GUARD_S = 120.0
_ENCODINGS = {
    "PNG": frame_pb2.IMAGE_ENCODING_PNG,
    "JPEG": frame_pb2.IMAGE_ENCODING_JPEG,
    "WEBP": frame_pb2.IMAGE_ENCODING_WEBP,
}
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    # Each benchmark channel is its own connection, as each client machine's would be.
    ("grpc.use_local_subchannel_pool", 1),
]


@dataclass(frozen=True)
class FrameSource:
    """Encoded frames of one size and format; sessions cycle through them."""

    frames: tuple[bytes, ...]
    width: int
    height: int
    fmt: str = "PNG"

    def frame(self, frame_id: str, index: int) -> frame_pb2.Frame:
        return frame_pb2.Frame(
            frame_id=frame_id,
            size=geometry_pb2.Size(width=self.width, height=self.height),
            encoding=_ENCODINGS[self.fmt],
            data=self.frames[index % len(self.frames)],
            source=geometry_pb2.Rect(x=0, y=0, width=self.width, height=self.height),
            scale_factor=1.0,
        )

    @property
    def mean_bytes(self) -> float:
        return sum(len(f) for f in self.frames) / len(self.frames)


class SessionError(Exception):
    """The server answered something a healthy session never gets."""


class BenchSession:
    def __init__(self, channel: grpc.aio.Channel, source: FrameSource, name: str) -> None:
        self._stub = agent_pb2_grpc.AgentServiceStub(channel)
        self._source = source
        self.name = name
        self.steps = 0
        self._pending: list[str] = []
        self._call: grpc.aio.StreamStreamCall | None = None

    async def start(self, task: str = "benchmark") -> None:
        self._call = self._stub.RunSession()
        start = agent_pb2.SessionStart(
            task=task,
            displays=[
                geometry_pb2.Display(
                    display_id="0",
                    bounds=geometry_pb2.Rect(
                        x=0, y=0, width=self._source.width, height=self._source.height
                    ),
                    scale_factor=1.0,
                    primary=True,
                )
            ],
        )
        response = await self._exchange(agent_pb2.RunSessionRequest(start=start))
        if response.WhichOneof("event") != "started":
            raise SessionError(f"{self.name}: expected started, got {response}")

    async def step(self) -> float:
        """One observation -> actions round trip; its latency in seconds."""
        observation = agent_pb2.Observation(
            results=[
                action_pb2.ActionResult(action_id=a, status=action_pb2.ACTION_STATUS_OK)
                for a in self._pending
            ],
        )
        observation.frame.CopyFrom(self._source.frame(f"{self.name}-{self.steps}", self.steps))
        request = agent_pb2.RunSessionRequest(observation=observation)
        started = time.perf_counter()
        response = await self._exchange(request)
        elapsed = time.perf_counter() - started
        if response.WhichOneof("event") != "actions":
            raise SessionError(f"{self.name} step {self.steps + 1}: got {response}")
        self._pending = [a.action_id for a in response.actions.actions]
        self.steps += 1
        return elapsed

    async def close(self) -> None:
        """Half-close and read to the end, as a client that stops does."""
        call = self._call
        if call is None:
            return
        self._call = None
        await asyncio.wait_for(call.done_writing(), GUARD_S)
        while True:
            message = await asyncio.wait_for(call.read(), GUARD_S)
            if message is grpc.aio.EOF:
                break
        code = await call.code()
        if code != grpc.StatusCode.OK:
            raise SessionError(f"{self.name}: stream ended {code.name}")

    def cancel(self) -> None:
        if self._call is not None:
            self._call.cancel()
            self._call = None

    async def _exchange(self, request: agent_pb2.RunSessionRequest) -> agent_pb2.RunSessionResponse:
        assert self._call is not None, "start() first"
        return await exchange(self._call, request, self.name)


async def exchange(
    call: grpc.aio.StreamStreamCall, request: agent_pb2.RunSessionRequest, name: str
) -> agent_pb2.RunSessionResponse:
    """One message out, one in, each within the hang guard."""
    await asyncio.wait_for(call.write(request), GUARD_S)
    response = await asyncio.wait_for(call.read(), GUARD_S)
    if response is grpc.aio.EOF:
        raise SessionError(f"{name}: the server closed the stream")
    assert isinstance(response, agent_pb2.RunSessionResponse)
    return response


def open_channels(address: str, count: int) -> list[grpc.aio.Channel]:
    return [grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS) for _ in range(count)]


async def close_channels(channels: Sequence[grpc.aio.Channel]) -> None:
    await asyncio.gather(*(c.close() for c in channels))


@dataclass
class LoadResult:
    sessions: int
    seconds: float
    steps: int
    latencies: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    # Server CPU (user + system) over the measured window, when known.
    server_cpu_s: float | None = None

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


def error_key(exc: BaseException) -> str:
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {exc.details()}"[:160]
    return f"{type(exc).__name__}: {exc}"[:160]


async def open_sessions(
    channels: Sequence[grpc.aio.Channel],
    source: FrameSource,
    count: int,
    errors: Counter[str],
    *,
    prefix: str = "s",
    parallel: int = 64,
) -> list[BenchSession]:
    """`count` started sessions spread over the channels (failures counted, not raised)."""
    gate = asyncio.Semaphore(parallel)
    sessions = [
        BenchSession(channels[i % len(channels)], source, f"{prefix}{i}") for i in range(count)
    ]

    async def start(session: BenchSession) -> BenchSession | None:
        async with gate:
            try:
                await session.start()
            except (grpc.aio.AioRpcError, SessionError, TimeoutError) as exc:
                errors[error_key(exc)] += 1
                session.cancel()
                return None
        return session

    started = await asyncio.gather(*(start(s) for s in sessions))
    return [s for s in started if s is not None]


async def close_sessions(sessions: Sequence[BenchSession], errors: Counter[str]) -> None:
    async def close(session: BenchSession) -> None:
        try:
            await session.close()
        except (grpc.aio.AioRpcError, SessionError, TimeoutError) as exc:
            errors[error_key(exc)] += 1
            session.cancel()

    await asyncio.gather(*(close(s) for s in sessions))


async def run_load(
    address: str,
    source: FrameSource,
    *,
    sessions: int,
    seconds: float,
    warmup_s: float,
    channels: int,
    server_pid: int | None = None,
    prefix: str = "s",
) -> LoadResult:
    """`sessions` concurrent sessions stepping as fast as the server answers.

    Steps are counted (and latencies kept) only inside the measured window, which
    opens `warmup_s` after every session has started."""
    from tests.bench.common import cpu_seconds

    pool = open_channels(address, max(1, min(channels, sessions)))
    errors: Counter[str] = Counter()
    result = LoadResult(sessions=sessions, seconds=seconds, steps=0, errors=errors)
    try:
        opened = await open_sessions(pool, source, sessions, errors, prefix=prefix)
        loop = asyncio.get_running_loop()
        window_start = loop.time() + warmup_s
        window_end = window_start + seconds

        async def drive(session: BenchSession) -> None:
            try:
                while loop.time() < window_end:
                    latency = await session.step()
                    now = loop.time()
                    if window_start <= now - latency and now <= window_end:
                        result.steps += 1
                        result.latencies.append(latency)
            except (grpc.aio.AioRpcError, SessionError, TimeoutError) as exc:
                errors[error_key(exc)] += 1
                session.cancel()

        cpu_task = asyncio.create_task(
            _cpu_over_window(server_pid, window_start, window_end, loop, cpu_seconds)
        )
        await asyncio.gather(*(drive(s) for s in opened))
        result.server_cpu_s = await cpu_task
        await close_sessions(opened, errors)
    finally:
        await close_channels(pool)
    return result


async def _cpu_over_window(
    pid: int | None,
    start: float,
    end: float,
    loop: asyncio.AbstractEventLoop,
    reader: object,
) -> float | None:
    if pid is None:
        return None
    assert callable(reader)
    await asyncio.sleep(max(0.0, start - loop.time()))
    before = float(reader(pid))
    await asyncio.sleep(max(0.0, end - loop.time()))
    return float(reader(pid)) - before


async def run_latency(
    address: str, source: FrameSource, *, steps: int, warmup: int, prefix: str = "lat"
) -> list[float]:
    """One session, `warmup` unmeasured steps then `steps` measured ones, back to back."""
    pool = open_channels(address, 1)
    try:
        session = BenchSession(pool[0], source, prefix)
        await session.start()
        for _ in range(warmup):
            await session.step()
        latencies = [await session.step() for _ in range(steps)]
        await session.close()
        return latencies
    finally:
        await close_channels(pool)
