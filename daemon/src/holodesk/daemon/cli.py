"""`holodeskd` command line: flags -> ServerConfig -> serve() until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence

from holodesk.daemon.config import DEFAULT_LISTEN, MIB, ServerConfig
from holodesk.daemon.dialects import DialectConfigError, dialect_names
from holodesk.daemon.policies.registry import PolicyConfigError, policy_entries
from holodesk.daemon.server import serve

log = logging.getLogger("holodeskd")


def build_parser() -> argparse.ArgumentParser:
    policies = "; ".join(f"{e.name}: {e.description}" for e in policy_entries())
    parser = argparse.ArgumentParser(
        prog="holodeskd", description="gRPC daemon that runs computer-use agent sessions."
    )
    parser.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        help="HOST:PORT to bind (port 0 picks a free one; default %(default)s)",
    )
    parser.add_argument(
        "--policy", default="ocr", help=f"policy to serve ({policies}; default ocr)"
    )
    parser.add_argument("--script", help="scripted policy: JSON list of model outputs")
    parser.add_argument(
        "--dialect", help=f"built-in dialect for model policies ({', '.join(dialect_names())})"
    )
    parser.add_argument("--dialect-file", help="JSON/TOML dialect overriding a built-in")
    parser.add_argument(
        "--policy-opt",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra policy option (repeatable)",
    )
    parser.add_argument("--max-message-mb", type=float, default=32.0, help="gRPC message limit")
    parser.add_argument(
        "--max-frame-mb",
        type=float,
        default=None,
        help="frame size limit (default: 16, or the message limit if lower)",
    )
    parser.add_argument("--max-steps", type=int, default=100, help="session step limit")
    parser.add_argument(
        "--grace-s", type=float, default=10.0, help="time running steps get on shutdown"
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="default %(default)s",
    )
    return parser


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    options: dict[str, str] = {}
    for item in args.policy_opt:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--policy-opt {item!r} is not KEY=VALUE")
        options[key] = value
    for key in ("script", "dialect", "dialect_file"):
        value = getattr(args, key)
        if value:
            options[key] = value
    message_bytes = int(args.max_message_mb * MIB)
    if args.max_frame_mb is None:
        frame_bytes = min(16 * MIB, message_bytes)
    else:
        frame_bytes = int(args.max_frame_mb * MIB)
    return ServerConfig(
        listen=args.listen,
        policy=args.policy,
        policy_options=options,
        max_message_bytes=message_bytes,
        max_frame_bytes=frame_bytes,
        max_steps=args.max_steps,
        grace_s=args.grace_s,
    )


async def run(config: ServerConfig) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with serve(config) as running:
        print(f"holodeskd listening on {running.address}", flush=True)
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({stopping, running.policies_started}, return_when="FIRST_COMPLETED")
        if running.policies_started.done() and running.policies_started.exception():
            stopping.cancel()
            return 1  # logged by serve(); health never went SERVING
        await stopping
        log.info("signal received")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        config = config_from_args(args)
        return asyncio.run(run(config))
    except (PolicyConfigError, DialectConfigError, ValueError, OSError) as exc:
        print(f"holodeskd: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
