"""Protocol violations and bad input: each gets its own status code, with details,
and never disturbs another session running at the same time."""

from __future__ import annotations

import io
import os
from collections.abc import Awaitable, Callable

import grpc
import pytest
from google.rpc import error_details_pb2
from PIL import Image

from holodesk.daemon.frames import EncodedFrame
from holodesk.daemon.policies.base import Decision, Location
from holodesk.daemon.steps import StepContext
from holodesk.proto.v1 import action_pb2, agent_pb2, frame_pb2
from tests.daemon.support import (
    Daemon,
    Stream,
    holo,
    make_frame,
    ok_results,
    rich_status,
    running_daemon,
    scripted_policy,
    start_request,
)

CLICK = holo({"action": "click", "x": 100, "y": 100})
MIB = 1024 * 1024


def noise_png(side: int) -> bytes:
    """A PNG that does not compress: about 3 bytes per pixel."""
    image = Image.frombytes("RGB", (side, side), os.urandom(side * side * 3))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


async def check_other_session_survives(daemon: Daemon, other: Stream) -> None:
    """A session started before the failure still runs to its end."""
    first = await other.observe(make_frame("ok-1"))
    assert first.actions.actions[0].click.point.x == pytest.approx(128.0)
    ended = await other.observe(make_frame("ok-2"), ok_results(first.actions))
    assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
    await other.finished_ok()


Scenario = Callable[[Stream], Awaitable[None]]


async def _observation_first(stream: Stream) -> None:
    await stream.send(agent_pb2.RunSessionRequest(observation=agent_pb2.Observation()))


async def _empty_first(stream: Stream) -> None:
    await stream.send(agent_pb2.RunSessionRequest())


async def _two_starts(stream: Stream) -> None:
    await stream.start()
    await stream.send(start_request())


async def _empty_task(stream: Stream) -> None:
    await stream.send(start_request("   "))


async def _no_frame(stream: Stream) -> None:
    await stream.start()
    await stream.send(agent_pb2.RunSessionRequest(observation=agent_pb2.Observation()))


async def _wrong_size(stream: Stream) -> None:
    await stream.start()
    await stream.observe_nowait(make_frame("f", 640, 480, declared=(800, 600)))


async def _wrong_encoding(stream: Stream) -> None:
    await stream.start()
    frame = make_frame("f", 64, 64)
    frame.encoding = frame_pb2.IMAGE_ENCODING_JPEG
    await stream.observe_nowait(frame)


async def _garbage_bytes(stream: Stream) -> None:
    await stream.start()
    await stream.observe_nowait(make_frame("f", 64, 64, data=b"\x89PNG not really" * 10))


async def _unknown_result(stream: Stream) -> None:
    await stream.start()
    result = action_pb2.ActionResult(action_id="nope", status=action_pb2.ACTION_STATUS_OK)
    await stream.observe_nowait(make_frame("f"), [result])


async def _missing_result(stream: Stream) -> None:
    await stream.start()
    await stream.observe(make_frame("f1"))
    await stream.observe_nowait(make_frame("f2"))


async def _reused_frame_id(stream: Stream) -> None:
    await stream.start()
    response = await stream.observe(make_frame("same"))
    await stream.observe_nowait(make_frame("same"), ok_results(response.actions))


async def _unknown_resume_token(stream: Stream) -> None:
    await stream.send(start_request(resume_token="not-a-token"))


async def _unknown_policy(stream: Stream) -> None:
    await stream.send(start_request(policy="gpt-17"))


@pytest.mark.parametrize(
    ("scenario", "code", "field", "text"),
    [
        (_observation_first, grpc.StatusCode.FAILED_PRECONDITION, None, "must be start"),
        (_empty_first, grpc.StatusCode.INVALID_ARGUMENT, "event", "empty message"),
        (_two_starts, grpc.StatusCode.FAILED_PRECONDITION, None, "already started"),
        (_empty_task, grpc.StatusCode.INVALID_ARGUMENT, "start.task", "empty"),
        (_no_frame, grpc.StatusCode.INVALID_ARGUMENT, "observation.frame", "required"),
        (_wrong_size, grpc.StatusCode.INVALID_ARGUMENT, "observation.frame.size", "640x480"),
        (_wrong_encoding, grpc.StatusCode.INVALID_ARGUMENT, "observation.frame.encoding", "PNG"),
        (_garbage_bytes, grpc.StatusCode.INVALID_ARGUMENT, "observation.frame.data", "decodable"),
        (
            _unknown_result,
            grpc.StatusCode.INVALID_ARGUMENT,
            "observation.results[0].action_id",
            "unknown action id 'nope'",
        ),
        (_missing_result, grpc.StatusCode.INVALID_ARGUMENT, "observation.results", "missing"),
        (_reused_frame_id, grpc.StatusCode.INVALID_ARGUMENT, "observation.frame.frame_id", "used"),
        (_unknown_resume_token, grpc.StatusCode.NOT_FOUND, None, "resume token"),
        (_unknown_policy, grpc.StatusCode.NOT_FOUND, None, "policy gpt-17"),
    ],
)
async def test_bad_messages_get_precise_errors_and_spare_other_sessions(
    scenario: Scenario, code: grpc.StatusCode, field: str | None, text: str
) -> None:
    policy = scripted_policy([CLICK, holo({"action": "answer", "content": "fine"})])
    async with running_daemon([policy]) as daemon:
        other = daemon.stream()
        await other.start()
        bad = daemon.stream()
        await scenario(bad)
        error = await bad.error()
        assert error.code() == code, error.details()
        assert text in (error.details() or "")
        status = rich_status(error)
        assert status.code == code.value[0]
        if field is not None:
            request = error_details_pb2.BadRequest()
            assert status.details[0].Unpack(request)
            assert request.field_violations[0].field == field
        await check_other_session_survives(daemon, other)
        assert len(daemon.running.registry) == 0


async def test_frame_above_the_frame_limit_is_invalid_argument() -> None:
    data = noise_png(720)  # ~1.5 MiB: under the message limit, over the frame limit
    assert MIB < len(data) < 2 * MIB
    policy = scripted_policy([CLICK, holo({"action": "answer", "content": "fine"})])
    async with running_daemon([policy], max_message_bytes=3 * MIB, max_frame_bytes=MIB) as daemon:
        other = daemon.stream()
        await other.start()
        bad = daemon.stream()
        await bad.start()
        await bad.observe_nowait(make_frame("big", 720, 720, data=data))
        error = await bad.error()
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "above the frame limit" in (error.details() or "")
        await check_other_session_survives(daemon, other)


async def test_message_above_the_grpc_limit_is_resource_exhausted() -> None:
    data = noise_png(1100)  # ~3.5 MiB, over the 3 MiB message limit
    policy = scripted_policy([CLICK, holo({"action": "answer", "content": "fine"})])
    async with running_daemon([policy], max_message_bytes=3 * MIB, max_frame_bytes=MIB) as daemon:
        other = daemon.stream()
        await other.start()
        bad = daemon.stream()
        await bad.start()
        await bad.observe_nowait(make_frame("huge", 1100, 1100, data=data))
        error = await bad.error()
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        await check_other_session_survives(daemon, other)


class ExplodingPolicy:
    """Wraps a scripted policy; decide() raises for tasks that say so."""

    def __init__(self) -> None:
        self.inner = scripted_policy([CLICK, holo({"action": "answer", "content": "fine"})])
        self.name = "scripted"
        self.description = "explodes on demand"

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    async def decide(self, context: StepContext) -> Decision:
        if context.task == "explode":
            raise ZeroDivisionError("the policy divided by zero")
        return await self.inner.decide(context)

    async def locate(
        self, frame: EncodedFrame, descriptions: tuple[str, ...]
    ) -> tuple[Location, ...]:
        raise KeyError("no such widget")


async def test_unexpected_exceptions_are_internal_and_name_the_type() -> None:
    policy = ExplodingPolicy()
    async with running_daemon([policy]) as daemon:  # type: ignore[list-item]
        other = daemon.stream()
        await other.start()
        bad = daemon.stream()
        await bad.start("explode")
        await bad.observe_nowait(make_frame("f"))
        error = await bad.error()
        assert error.code() == grpc.StatusCode.INTERNAL
        assert "ZeroDivisionError: the policy divided by zero" in (error.details() or "")
        await check_other_session_survives(daemon, other)


async def test_unexpected_exceptions_in_unary_calls_are_internal_too() -> None:
    async with running_daemon([ExplodingPolicy()]) as daemon:  # type: ignore[list-item]
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await daemon.agent.Locate(
                agent_pb2.LocateRequest(frame=make_frame("f"), descriptions=["OK"])
            )
    assert caught.value.code() == grpc.StatusCode.INTERNAL
    assert "KeyError: 'no such widget'" in (caught.value.details() or "")
