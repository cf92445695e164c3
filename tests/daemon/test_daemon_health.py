"""grpc.health.v1 follows the policy's readiness; reflection lists every service."""

from __future__ import annotations

import asyncio

import grpc
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from holodesk.proto.v1 import control_pb2
from tests.daemon.support import GUARD_S, GatedPolicy, rich_status, running_daemon

SERVICES = ("", "holodesk.v1.AgentService", "holodesk.v1.ControlService")


async def _statuses(channel: grpc.aio.Channel) -> list[int]:
    stub = health_pb2_grpc.HealthStub(channel)
    return [
        (await stub.Check(health_pb2.HealthCheckRequest(service=name))).status for name in SERVICES
    ]


async def test_health_is_not_serving_until_the_policy_has_started() -> None:
    policy = GatedPolicy([])
    async with running_daemon([policy], wait_ready=False) as daemon:
        not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
        assert await _statuses(daemon.channel) == [not_serving] * 3

        # Sessions are refused meanwhile, with a hint to retry.
        stream = daemon.stream()
        await stream.start_nowait()
        error = await stream.error()
        assert error.code() == grpc.StatusCode.UNAVAILABLE
        assert "still starting" in (error.details() or "")
        retry = error_details_pb2.RetryInfo()
        assert rich_status(error).details[0].Unpack(retry)
        assert retry.retry_delay.seconds >= 1

        info = await daemon.control.GetServerInfo(control_pb2.GetServerInfoRequest())
        # `computer` (attached desktops, computer.proto) is ready at once; health waits for all.
        assert [p.ready for p in info.policies] == [False, True]

        policy.release.set()
        await asyncio.wait_for(asyncio.shield(daemon.running.policies_started), GUARD_S)
        serving = health_pb2.HealthCheckResponse.SERVING
        assert await _statuses(daemon.channel) == [serving] * 3


async def test_health_goes_not_serving_on_stop() -> None:
    policy = GatedPolicy([])
    policy.release.set()
    async with running_daemon([policy]) as daemon:
        watch = health_pb2_grpc.HealthStub(daemon.channel).Watch(
            health_pb2.HealthCheckRequest(service="")
        )
        first = await asyncio.wait_for(watch.read(), GUARD_S)
        assert first.status == health_pb2.HealthCheckResponse.SERVING
        stopping = asyncio.create_task(daemon.running.stop(grace_s=1.0))
        second = await asyncio.wait_for(watch.read(), GUARD_S)
        assert second.status == health_pb2.HealthCheckResponse.NOT_SERVING
        await stopping


async def test_reflection_lists_the_services() -> None:
    policy = GatedPolicy([])
    policy.release.set()
    async with running_daemon([policy]) as daemon:
        call = reflection_pb2_grpc.ServerReflectionStub(daemon.channel).ServerReflectionInfo()
        await call.write(reflection_pb2.ServerReflectionRequest(list_services=""))
        response = await asyncio.wait_for(call.read(), GUARD_S)
        names = {s.name for s in response.list_services_response.service}
        assert {
            "holodesk.v1.AgentService",
            "holodesk.v1.ControlService",
            "grpc.health.v1.Health",
            "grpc.reflection.v1alpha.ServerReflection",
        } <= names

        # And the contract's descriptors are served, so grpcurl can call it.
        await call.write(
            reflection_pb2.ServerReflectionRequest(
                file_containing_symbol="holodesk.v1.AgentService"
            )
        )
        files = await asyncio.wait_for(call.read(), GUARD_S)
        assert files.file_descriptor_response.file_descriptor_proto
        await call.done_writing()


async def test_reflection_answers_as_v1_too() -> None:
    """grpcurl, grpcui and Postman ask grpc.reflection.v1 first (the messages are
    v1alpha's, field for field)."""
    policy = GatedPolicy([])
    policy.release.set()
    async with running_daemon([policy]) as daemon:
        call = daemon.channel.stream_stream(
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )()
        await call.write(reflection_pb2.ServerReflectionRequest(list_services=""))
        response = await asyncio.wait_for(call.read(), GUARD_S)
        names = {s.name for s in response.list_services_response.service}
        assert {
            "holodesk.v1.AgentService",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
        } <= names
        await call.write(
            reflection_pb2.ServerReflectionRequest(
                file_containing_symbol="holodesk.v1.ControlService"
            )
        )
        files = await asyncio.wait_for(call.read(), GUARD_S)
        assert files.file_descriptor_response.file_descriptor_proto
        await call.done_writing()
