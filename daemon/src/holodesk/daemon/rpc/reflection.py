"""Server reflection under both of its names: grpc.reflection.v1 and v1alpha.

grpcio-reflection serves only v1alpha, while current tools (grpcurl, grpcui, Postman,
Envoy's gRPC-JSON bridge) ask v1 first. The two services are the same messages field
for field under another package name, so one servicer answers both: v1 is mounted as
a generic handler whose messages are read and written with v1alpha's classes.
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

V1_SERVICE_NAME = "grpc.reflection.v1.ServerReflection"
SERVICE_NAMES = (V1_SERVICE_NAME, reflection.SERVICE_NAME)


def enable_reflection(service_names: Iterable[str], server: grpc.aio.Server) -> None:
    """Reflection of `service_names` (and of itself, both names) on `server`."""
    servicer = reflection.aio.ReflectionServicer((*service_names, *SERVICE_NAMES))
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    v1 = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(V1_SERVICE_NAME, {"ServerReflectionInfo": v1}),)
    )
