"""A real holodeskd with the OCR policy on 127.0.0.1, serving, for the eval end-to-end tests."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.daemon.support import GUARD_S, HOLODESKD


@contextmanager
def ocr_holodeskd() -> Iterator[str]:
    """The daemon's address once its health service says SERVING; stopped on exit."""
    process = subprocess.Popen(
        [str(HOLODESKD), "--listen", "127.0.0.1:0", "--policy", "ocr"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "listening on" in line, line
        address = line.rsplit(" ", 1)[-1].strip()
        with grpc.insecure_channel(address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            request = health_pb2.HealthCheckRequest(service="")
            for reply in stub.Watch(request, timeout=GUARD_S):
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    break
        yield address
    finally:
        process.terminate()
        process.wait(timeout=30)
