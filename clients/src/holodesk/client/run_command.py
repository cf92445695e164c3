"""`holodesk run "task"`: one agent session on this desktop."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from holodesk.client.capture import ALL_DISPLAYS, CaptureError, find_display
from holodesk.client.cli import Command
from holodesk.client.exit_codes import ExitCode, for_outcome
from holodesk.client.render import Printer
from holodesk.client.session import SessionOptions, run_session
from holodesk.platform.base import Backend
from holodesk.platform.errors import PlatformError
from holodesk.platform.select import open_backend

SERVER_ENV = "HOLODESK_SERVER"


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", nargs="+", help="what to do, in natural language")
    parser.add_argument(
        "--server",
        default=os.environ.get(SERVER_ENV),
        metavar="HOST:PORT",
        help=f"the daemon's address (default: ${SERVER_ENV})",
    )
    parser.add_argument("--backend", help="platform backend (default: this OS's own)")
    parser.add_argument(
        "--display",
        metavar="DISPLAY_ID|all",
        help="the display to show the agent, or 'all' for the whole desktop (default: primary)",
    )
    parser.add_argument(
        "--max-steps", type=_non_negative, default=0, help="step limit (0: the daemon's default)"
    )
    parser.add_argument("--policy", default="", help="daemon policy (default: the daemon's)")
    security = parser.add_mutually_exclusive_group()
    security.add_argument(
        "--insecure",
        dest="insecure",
        action="store_const",
        const=True,
        help="plaintext gRPC (the default for loopback addresses)",
    )
    security.add_argument(
        "--tls",
        dest="insecure",
        action="store_const",
        const=False,
        help="TLS even for a loopback address (the default for any other)",
    )
    parser.add_argument("--ca-cert", type=Path, help="PEM roots to verify the daemon's TLS cert")


def run(args: argparse.Namespace) -> int:
    task = " ".join(args.task).strip()
    if not task:
        return _usage("the task is empty")
    if not args.server:
        return _usage(f"no daemon address: pass --server HOST:PORT or set ${SERVER_ENV}")
    if args.ca_cert is not None and not args.ca_cert.is_file():
        return _usage(f"--ca-cert {args.ca_cert}: no such file")
    try:
        backend = open_backend(args.backend)
    except PlatformError as error:
        print(f"holodesk: {error}", file=sys.stderr)
        return ExitCode.BACKEND_UNAVAILABLE
    try:
        return _run(args, task, backend)
    finally:
        backend.close()


def _run(args: argparse.Namespace, task: str, backend: Backend) -> int:
    if args.display is not None and args.display != ALL_DISPLAYS:
        try:
            find_display(backend.screen.displays(), args.display)
        except CaptureError as error:
            return _usage(str(error))
    printer = Printer()
    options = SessionOptions(
        display=args.display,
        max_steps=args.max_steps,
        policy=args.policy,
        on_started=printer.started,
        on_step=printer.step,
        insecure=args.insecure,
        root_certificates=args.ca_cert,
    )
    try:
        outcome = asyncio.run(run_session(args.server, task, backend, options))
    except KeyboardInterrupt:
        # A second Ctrl-C during the cancel handshake; backend.close() releases input.
        print("holodesk: interrupted", file=sys.stderr)
        return ExitCode.CANCELLED
    printer.outcome(outcome)
    return for_outcome(outcome.outcome)


def _usage(message: str) -> int:
    print(f"holodesk run: error: {message}", file=sys.stderr)
    return ExitCode.USAGE


COMMAND = Command(
    name="run",
    help="run one agent session on this desktop",
    configure=configure,
    run=run,
)
