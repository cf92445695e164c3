"""Helpers for the daemon tests: real frames, a raw RunSession client, test policies."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from PIL import Image, ImageDraw

from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.base import Decision, Policy
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.principals import Role
from holodesk.daemon.rpc.credentials import new_token, token_entry_toml
from holodesk.daemon.rpc.server import RunningServer, serve
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.steps import StepContext
from holodesk.proto.v1 import (
    action_pb2,
    agent_pb2,
    agent_pb2_grpc,
    control_pb2_grpc,
    frame_pb2,
    geometry_pb2,
)
from tests.support.fault_proxy import FaultProxy

# Hang guard for awaits in tests (never a timing assertion).
GUARD_S = 30.0
# The installed daemon command, for tests that run it as a process of its own.
HOLODESKD = Path(sys.executable).with_name("holodeskd")


async def spawn_holodeskd(*args: str) -> tuple[asyncio.subprocess.Process, str]:
    """A real holodeskd on 127.0.0.1:0 (stdout and stderr piped) and the address it
    prints on its first line; the caller stops the process."""
    process = await asyncio.create_subprocess_exec(
        str(HOLODESKD),
        *("--listen", "127.0.0.1:0", *args),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), GUARD_S)).decode()
    except BaseException:
        process.kill()
        await process.wait()
        raise
    return process, line.rsplit(" ", 1)[-1].strip()


async def wait_serving(channel: grpc.aio.Channel) -> None:
    """Until the daemon's health says SERVING (its policy has started)."""
    watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(service=""))
    while (await asyncio.wait_for(watch.read(), GUARD_S)).status != (
        health_pb2.HealthCheckResponse.SERVING
    ):
        pass
    watch.cancel()


def image_bytes(width: int, height: int, fmt: str = "PNG") -> bytes:
    image = Image.new("RGB", (width, height), (240, 240, 240))
    draw = ImageDraw.Draw(image)
    draw.rectangle((width // 4, height // 4, width // 2, height // 2), fill=(20, 90, 200))
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


def make_frame(
    frame_id: str,
    width: int = 1280,
    height: int = 720,
    *,
    fmt: str = "PNG",
    data: bytes | None = None,
    declared: tuple[int, int] | None = None,
) -> frame_pb2.Frame:
    encoding = {"PNG": frame_pb2.IMAGE_ENCODING_PNG, "JPEG": frame_pb2.IMAGE_ENCODING_JPEG}[fmt]
    w, h = declared or (width, height)
    return frame_pb2.Frame(
        frame_id=frame_id,
        size=geometry_pb2.Size(width=w, height=h),
        encoding=encoding,
        data=image_bytes(width, height, fmt) if data is None else data,
        source=geometry_pb2.Rect(x=0, y=0, width=width, height=height),
        scale_factor=1.0,
    )


def holo(action: dict[str, Any], thought: str = "thinking", note: str = "") -> str:
    """A model output in the holo dialect."""
    return json.dumps({"note": note, "thought": thought, "action": action})


def start_request(task: str = "do the thing", **kwargs: Any) -> agent_pb2.RunSessionRequest:
    return agent_pb2.RunSessionRequest(start=agent_pb2.SessionStart(task=task, **kwargs))


def observation(
    frame: frame_pb2.Frame | None,
    results: Sequence[action_pb2.ActionResult] = (),
    user_reply: str = "",
) -> agent_pb2.RunSessionRequest:
    obs = agent_pb2.Observation(results=list(results), user_reply=user_reply)
    if frame is not None:
        obs.frame.CopyFrom(frame)
    return agent_pb2.RunSessionRequest(observation=obs)


def ok_results(actions: agent_pb2.Actions) -> list[action_pb2.ActionResult]:
    return [
        action_pb2.ActionResult(action_id=a.action_id, status=action_pb2.ACTION_STATUS_OK)
        for a in actions.actions
    ]


class Stream:
    """A raw RunSession call driven message by message."""

    def __init__(
        self,
        channel: grpc.aio.Channel,
        *,
        metadata: Sequence[tuple[str, str]] | None = None,
        timeout: float | None = None,
    ) -> None:
        self.call = agent_pb2_grpc.AgentServiceStub(channel).RunSession(
            metadata=metadata, timeout=timeout
        )

    async def send(self, request: agent_pb2.RunSessionRequest) -> None:
        await asyncio.wait_for(self.call.write(request), GUARD_S)

    async def recv(self) -> agent_pb2.RunSessionResponse:
        response = await asyncio.wait_for(self.call.read(), GUARD_S)
        assert response is not grpc.aio.EOF, "the daemon closed the stream"
        assert isinstance(response, agent_pb2.RunSessionResponse)
        return response

    async def start(self, task: str = "do the thing", **kwargs: Any) -> agent_pb2.SessionStarted:
        await self.send(start_request(task, **kwargs))
        response = await self.recv()
        assert response.WhichOneof("event") == "started", response
        return response.started

    async def start_nowait(self, task: str = "do the thing", **kwargs: Any) -> None:
        await self.send(start_request(task, **kwargs))

    async def observe(
        self,
        frame: frame_pb2.Frame | None,
        results: Sequence[action_pb2.ActionResult] = (),
        user_reply: str = "",
    ) -> agent_pb2.RunSessionResponse:
        await self.send(observation(frame, results, user_reply))
        return await self.recv()

    async def observe_nowait(
        self, frame: frame_pb2.Frame | None, results: Sequence[action_pb2.ActionResult] = ()
    ) -> None:
        """Send an observation without waiting for an answer (errors are read later)."""
        await self.send(observation(frame, results))

    async def error(self) -> grpc.aio.AioRpcError:
        """The status the daemon aborted the stream with."""
        try:
            while True:
                response = await asyncio.wait_for(self.call.read(), GUARD_S)
                assert response is not grpc.aio.EOF, "stream ended without an error"
        except grpc.aio.AioRpcError as exc:
            return exc

    async def finished_ok(self) -> None:
        """The daemon closed the stream with OK after the last message."""
        response = await asyncio.wait_for(self.call.read(), GUARD_S)
        assert response is grpc.aio.EOF
        assert await self.call.code() == grpc.StatusCode.OK


def scripted_policy(outputs: Sequence[str], dialect: str = "holo") -> ModelPolicy:
    return ModelPolicy(get_dialect(dialect), ScriptedEngine(outputs), name="scripted")


class GatedPolicy(ModelPolicy):
    """A scripted policy whose start() blocks until released (a model still loading)."""

    def __init__(self, outputs: Sequence[str]) -> None:
        super().__init__(get_dialect(), ScriptedEngine(outputs), name="gated")
        self.release = asyncio.Event()

    async def start(self) -> None:
        await self.release.wait()
        await super().start()


class RecordingPolicy(ModelPolicy):
    """A scripted policy that records aborts and can be made to think forever."""

    def __init__(self, outputs: Sequence[str], *, block: bool = False) -> None:
        super().__init__(get_dialect(), ScriptedEngine(outputs), name="recording")
        self.block = block
        self.thinking = asyncio.Event()
        self.decisions = 0
        # What each decide() was given, in order (blocked ones included).
        self.contexts: list[StepContext] = []
        self.aborted: list[str] = []
        self.abort_seen = asyncio.Event()

    async def decide(self, context: StepContext) -> Decision:
        self.contexts.append(context)
        self.thinking.set()
        if self.block:
            await asyncio.Event().wait()
        self.decisions += 1
        return await super().decide(context)

    async def abort(self, session_id: str) -> None:
        self.aborted.append(session_id)
        self.abort_seen.set()
        await super().abort(session_id)


@dataclass
class Daemon:
    running: RunningServer
    channel: grpc.aio.Channel

    @property
    def control(self) -> control_pb2_grpc.ControlServiceStub:
        return control_pb2_grpc.ControlServiceStub(self.channel)

    @property
    def agent(self) -> agent_pb2_grpc.AgentServiceStub:
        return agent_pb2_grpc.AgentServiceStub(self.channel)

    def stream(self) -> Stream:
        return Stream(self.channel)


def bearer(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


@asynccontextmanager
async def running_daemon(
    policies: Sequence[Policy], *, wait_ready: bool = True, **config: Any
) -> AsyncIterator[Daemon]:
    settings = ServerConfig(listen="127.0.0.1:0", **config)
    async with serve(settings, policies=policies) as running:
        if wait_ready:
            await asyncio.wait_for(asyncio.shield(running.policies_started), GUARD_S)
        channel = grpc.aio.insecure_channel(
            running.address,
            options=[
                ("grpc.max_send_message_length", 64 * 1024 * 1024),
                ("grpc.max_receive_message_length", 64 * 1024 * 1024),
            ],
        )
        try:
            yield Daemon(running, channel)
        finally:
            await channel.close()


@asynccontextmanager
async def proxied(daemon: Daemon) -> AsyncIterator[tuple[FaultProxy, grpc.aio.Channel]]:
    """A channel that reaches the daemon through a fault proxy (to cut it mid-step)."""
    async with FaultProxy(daemon.running.host, daemon.running.port) as proxy:
        channel = grpc.aio.insecure_channel(proxy.address)
        try:
            yield proxy, channel
        finally:
            await channel.close()


def the_session(daemon: Daemon) -> Session:
    """The daemon's only session."""
    (session,) = daemon.running.registry.list()
    return session


async def wait_until(predicate: Callable[[], bool], what: str = "condition") -> None:
    """Poll until `predicate()` holds (a hang guard bounds it; never a timing assertion)."""

    async def poll() -> None:
        # Polling on purpose: the state lives in the daemon, which has no event for it.
        while not predicate():  # noqa: ASYNC110
            await asyncio.sleep(0.005)

    try:
        await asyncio.wait_for(poll(), GUARD_S)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def rich_status(error: grpc.aio.AioRpcError) -> Any:
    """The google.rpc.Status the daemon attached to an error (grpcio-status details)."""
    from google.rpc import status_pb2

    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status()
            status.ParseFromString(value)
            return status
    raise AssertionError(f"no rich status on {error.code()}: {error.details()}")


@dataclass(frozen=True)
class Tokens:
    """Bearer tokens by name, as written to a tokens file."""

    path: Path
    by_name: dict[str, str]

    def metadata(self, name: str) -> list[tuple[str, str]]:
        return bearer(self.by_name[name])


def write_tokens(directory: Path, clients: dict[str, str] | None = None, **roles: str) -> Tokens:
    """A tokens file with one fresh token per NAME=ROLE, and [[client]] CN=ROLE entries."""
    tokens = {name: new_token() for name in roles}
    text = "".join(
        token_entry_toml(name, Role(role), tokens[name]) + "\n" for name, role in roles.items()
    )
    for cn, role in (clients or {}).items():
        text += f'[[client]]\ncn = "{cn}"\nrole = "{role}"\n\n'
    path = directory / "tokens.toml"
    path.write_text(text)
    return Tokens(path, tokens)
