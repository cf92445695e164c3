"""`python -m holodesk.daemon.healthcheck ADDRESS`: exit 0 when holodeskd is SERVING.

For container HEALTHCHECKs and Kubernetes exec probes. Kubernetes' built-in gRPC
probe speaks plaintext only, while a daemon reachable from other pods must use TLS;
this check runs inside the container and speaks whichever the daemon does.
Exit status: 0 serving, 1 not serving (still loading the model, or draining),
2 unreachable or refused.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def check(
    address: str,
    *,
    ca_cert: Path | None = None,
    server_name: str | None = None,
    timeout_s: float = 5.0,
) -> int:
    if ca_cert is None:
        channel = grpc.insecure_channel(address)
    else:
        options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
        credentials = grpc.ssl_channel_credentials(root_certificates=ca_cert.read_bytes())
        channel = grpc.secure_channel(address, credentials, options=options)
    with channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=timeout_s)
        except grpc.RpcError as exc:
            print(f"holodeskd at {address}: {exc.code().name}: {exc.details()}", file=sys.stderr)
            return 2
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    print(f"holodeskd at {address}: {status}")
    return 0 if reply.status == health_pb2.HealthCheckResponse.SERVING else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m holodesk.daemon.healthcheck",
        description="Exit 0 when holodeskd is SERVING, 1 when not, 2 when unreachable.",
    )
    parser.add_argument("address", nargs="?", default="127.0.0.1:50051", help="HOST:PORT")
    # Environment defaults let one container HEALTHCHECK line serve TLS and plaintext set-ups.
    ca_default = os.environ.get("HOLODESK_HEALTH_CA_CERT")
    parser.add_argument(
        "--ca-cert",
        type=Path,
        default=Path(ca_default) if ca_default else None,
        help="PEM roots: speak TLS and verify with these (default: $HOLODESK_HEALTH_CA_CERT)",
    )
    parser.add_argument(
        "--server-name",
        default=os.environ.get("HOLODESK_HEALTH_SERVER_NAME"),
        help="name the certificate must carry, when probing 127.0.0.1 "
        "(default: $HOLODESK_HEALTH_SERVER_NAME)",
    )
    parser.add_argument("--timeout-s", type=float, default=5.0)
    args = parser.parse_args(argv)
    return check(
        args.address, ca_cert=args.ca_cert, server_name=args.server_name, timeout_s=args.timeout_s
    )


if __name__ == "__main__":
    sys.exit(main())
