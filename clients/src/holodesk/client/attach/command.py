"""`holodesk attach`: lend this desktop to agents that drive it through ComputerService.

It is `holodesk run` with the daemon's `computer` policy and the desktop's name
as the task (protos/holodesk/v1/computer.proto): the same executor, safety guard
(allowlist, chord denylist, rate limits, confirm mode, fail-safe corner), emergency
stop, reconnect-and-resume and recording, with the actions coming from whoever
calls ComputerService.Act on this desktop instead of from a model. A session that
reaches the daemon's step or time limit is followed by a new one under the same
name (the daemon keeps the desktop's action ids across them); Ctrl-C, SIGTERM or
the emergency stop end it.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from dataclasses import replace
from pathlib import Path

from holodesk.client.backend_args import add_backend_arguments, url_options
from holodesk.client.capture import ALL_DISPLAYS, CaptureError, find_display
from holodesk.client.channel import ChannelError, check_settings
from holodesk.client.cli import Command, command_error
from holodesk.client.connection_args import NO_SERVER, add_server_argument
from holodesk.client.credentials import CredentialsError
from holodesk.client.events import Outcome
from holodesk.client.exit_codes import ExitCode, for_outcome
from holodesk.client.outcome import SessionOutcome, StepRecord
from holodesk.client.render import Printer
from holodesk.client.run.command import (
    _configure_connection,
    _configure_safety,
    _stopped_by_sigterm,
    session_options,
)
from holodesk.client.session import SessionOptions, run_session
from holodesk.platform.base import Backend
from holodesk.platform.errors import PlatformError
from holodesk.platform.select import open_backend
from holodesk.proto.limits import ID_CHARS

# The daemon policy that relays ComputerService actions (holodesk.daemon.policies.computer).
COMPUTER_POLICY = "computer"
# Session endings after which the desktop attaches again under the same name.
ROLLOVER = (Outcome.STEP_LIMIT, Outcome.TIME_LIMIT)


def default_name(display: str | None) -> str:
    """This host's name, with the display when one is chosen."""
    host = socket.gethostname() or "desktop"
    return f"{host}:{display}" if display else host


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--name",
        help="the desktop's id in ComputerService.ListDesktops (default: this host's name)",
    )
    add_server_argument(parser)
    add_backend_arguments(parser, url_help="web backend: the page the desktop starts on")
    parser.add_argument(
        "--display",
        metavar="DISPLAY_ID|all",
        help="the display to lend, or 'all' for the whole desktop (default: primary)",
    )
    parser.add_argument(
        "--record",
        type=Path,
        metavar="DIR",
        help="also record every session here (for holodesk replay/report/export)",
    )
    _configure_connection(parser.add_argument_group("connection"))
    _configure_safety(parser.add_argument_group("safety"))
    # What session_options() reads and holodesk run's own flags would give.
    parser.set_defaults(max_steps=0, policy=COMPUTER_POLICY, json=False)


def run(args: argparse.Namespace) -> int:
    name = (args.name or default_name(args.display)).strip()
    if not name:
        return command_error("attach", "the desktop's name is empty")
    if len(name) > ID_CHARS:
        return command_error("attach", f"the desktop's name is longer than {ID_CHARS} characters")
    if not args.server:
        return command_error("attach", NO_SERVER)
    printer = Printer()
    try:
        options = session_options(args, printer)
        check_settings(args.server, options.channel)
        opening = url_options(args.backend, args.url)
    except (CredentialsError, ChannelError, ValueError) as error:
        return command_error("attach", str(error))
    options = _quiet_idle_steps(options, printer)
    try:
        backend = open_backend(args.backend, **opening)
    except PlatformError as error:
        print(f"holodesk: {error}", file=sys.stderr)
        return ExitCode.BACKEND_UNAVAILABLE
    try:
        if args.display is not None and args.display != ALL_DISPLAYS:
            try:
                find_display(backend.screen.displays(), args.display)
            except CaptureError as error:
                return command_error("attach", str(error))
        print(f"holodesk attach: desktop {name!r} on {args.server}", file=sys.stderr, flush=True)
        try:
            outcome = asyncio.run(_stopped_by_sigterm(attach(args.server, name, backend, options)))
        except (KeyboardInterrupt, asyncio.CancelledError):
            print("holodesk: interrupted", file=sys.stderr)
            return ExitCode.CANCELLED
        printer.outcome(outcome)
        return for_outcome(outcome.outcome)
    finally:
        backend.close()


async def attach(
    server: str, name: str, backend: Backend, options: SessionOptions
) -> SessionOutcome:
    """Keep the desktop attached: one session after another until one ends otherwise
    than by the daemon's step or time limit."""
    while True:
        outcome = await run_session(server, name, backend, options)
        if outcome.outcome not in ROLLOVER:
            return outcome
        print(
            f"holodesk attach: {outcome.outcome.value} ({outcome.reason}); attaching again",
            file=sys.stderr,
            flush=True,
        )


def _quiet_idle_steps(options: SessionOptions, printer: Printer) -> SessionOptions:
    """Print steps that carried actions; an idle desktop refreshes its frame every
    minute or so, which is nothing to tell."""

    def on_step(record: StepRecord) -> None:
        if record.actions:
            printer.step(record)

    return replace(options, on_step=on_step)


COMMAND = Command(
    name="attach",
    help="lend this desktop to agents that drive it through the daemon's ComputerService",
    configure=configure,
    run=run,
)
