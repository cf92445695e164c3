"""A real `holodesk attach` subprocess on the test's Xvfb, and the ComputerService
calls the computer-API tests make against it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import grpc

from holodesk.proto.v1 import action_pb2, computer_pb2, computer_pb2_grpc, frame_pb2, geometry_pb2
from tests.daemon.support import GUARD_S


@asynccontextmanager
async def attached(
    address: str, display: str, name: str, errlog: Path, *flags: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    """`holodesk attach --name NAME` on `display`; stopped with SIGTERM at the end."""
    with errlog.open("wb") as err:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "holodesk.client",
            "attach",
            *("--server", address, "--name", name, "--backend", "x11"),
            *flags,
            env={**os.environ, "DISPLAY": display},
            stdout=err,
            stderr=err,
        )
        try:
            yield process
        finally:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(process.wait(), GUARD_S)
                except TimeoutError:
                    process.kill()
                    await process.wait()


async def poll(
    predicate: Callable[[], Awaitable[bool]], what: str, errlog: Path | None = None
) -> None:
    """Until the async predicate holds (bounded by the hang guard, never a timing assert)."""

    async def loop() -> None:
        # Polling on purpose: the state is the daemon's, across a gRPC call.
        while not await predicate():  # noqa: ASYNC110
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(loop(), GUARD_S)
    except TimeoutError:
        log = await asyncio.to_thread(_read, errlog)
        raise AssertionError(f"timed out waiting for {what}\n{log}") from None


def _read(path: Path | None) -> str:
    return path.read_text(errors="replace") if path is not None and path.exists() else ""


async def wait_listed(
    api: computer_pb2_grpc.ComputerServiceStub,
    name: str,
    errlog: Path,
    metadata: list[tuple[str, str]] | None = None,
) -> computer_pb2.DesktopInfo:
    found: list[computer_pb2.DesktopInfo] = []

    async def listed() -> bool:
        response = await api.ListDesktops(computer_pb2.ListDesktopsRequest(), metadata=metadata)
        found[:] = [d for d in response.desktops if d.desktop_id == name and d.frame_id]
        return bool(found)

    await poll(listed, f"desktop {name} listed", errlog)
    return found[0]


def frame_point(frame: frame_pb2.Frame, screen_x: float, screen_y: float) -> geometry_pb2.Point:
    """A virtual-desktop point in the frame's pixels (the contract's mapping, inverted)."""
    source = frame.source
    return geometry_pb2.Point(
        x=(screen_x - source.x) * frame.size.width / source.width,
        y=(screen_y - source.y) * frame.size.height / source.height,
    )


def new_id() -> str:
    return uuid.uuid4().hex


def click_at(frame: frame_pb2.Frame, x: float, y: float, action_id: str = "") -> action_pb2.Action:
    return action_pb2.Action(
        action_id=action_id or new_id(),
        frame_id=frame.frame_id,
        click=action_pb2.ClickAction(point=frame_point(frame, x, y)),
    )


def status_name(status: int) -> str:
    return action_pb2.ActionStatus.Name(status)  # type: ignore[arg-type]


async def grpc_code(call: object) -> grpc.StatusCode:
    try:
        await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK
