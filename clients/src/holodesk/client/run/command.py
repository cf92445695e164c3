"""`holodesk run "task"`: one agent session on this desktop."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from holodesk.client.argtypes import non_negative_float, non_negative_int
from holodesk.client.backend_args import add_backend_arguments, url_options
from holodesk.client.capture import ALL_DISPLAYS, CaptureError, find_display
from holodesk.client.channel import ChannelError, check_settings
from holodesk.client.cli import Command, command_error
from holodesk.client.connection_args import (
    NO_SERVER,
    add_connection_arguments,
    add_server_argument,
    read_channel_settings,
)
from holodesk.client.credentials import (
    CredentialsError,
)
from holodesk.client.exit_codes import ExitCode, for_outcome
from holodesk.client.json_events import JsonPrinter
from holodesk.client.reconnect import ReconnectPolicy
from holodesk.client.render import Printer
from holodesk.client.safety.confirm import terminal_confirm
from holodesk.client.safety.settings import (
    ACTION_KINDS,
    DEFAULT_DENIED_CHORDS,
    DEFAULT_MAX_ACTIONS_PER_SECOND,
    DEFAULT_MAX_BATCH_ACTIONS,
    DEFAULT_MAX_CHARS_PER_SECOND,
    DEFAULT_MAX_TYPE_CHARS,
    SafetySettings,
)
from holodesk.client.session import SessionOptions, run_session
from holodesk.platform.base import Backend, Region
from holodesk.platform.errors import PlatformError
from holodesk.platform.safety.hotkeys import DEFAULT_EMERGENCY_STOP
from holodesk.platform.select import open_backend
from holodesk.proto.limits import MAX_ACTIONS

T = TypeVar("T")


def _region(text: str) -> Region:
    try:
        x, y, width, height = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected X,Y,WIDTH,HEIGHT in desktop pixels, got {text!r}"
        ) from None
    if width <= 0 or height <= 0:
        raise argparse.ArgumentTypeError(f"a redacted region needs a positive size, got {text!r}")
    return Region(x, y, width, height)


def _kinds(text: str) -> list[str]:
    kinds = [kind.strip() for kind in text.split(",") if kind.strip()]
    unknown = [kind for kind in kinds if kind not in ACTION_KINDS]
    if unknown or not kinds:
        named = ", ".join(unknown) if unknown else repr(text)
        raise argparse.ArgumentTypeError(
            f"unknown action kind(s) {named}: choose from {', '.join(ACTION_KINDS)}"
        )
    return kinds


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", nargs="+", help="what to do, in natural language")
    add_server_argument(parser)
    add_backend_arguments(parser, url_help="web backend: the page the task starts on")
    parser.add_argument(
        "--display",
        metavar="DISPLAY_ID|all",
        help="the display to show the agent, or 'all' for the whole desktop (default: primary)",
    )
    parser.add_argument(
        "--max-steps", type=non_negative_int, default=0, help="step limit (0: the daemon's default)"
    )
    parser.add_argument("--policy", default="", help="daemon policy (default: the daemon's)")
    parser.add_argument(
        "--record",
        type=Path,
        metavar="DIR",
        help="also record the session here (for holodesk replay/report/export on this machine)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="write one JSON object per event (started, step, action with its result, "
        "notice, outcome) to stdout instead of progress text",
    )
    _configure_connection(parser.add_argument_group("connection"))
    _configure_safety(parser.add_argument_group("safety"))


def _configure_connection(group: argparse._ArgumentGroup) -> None:
    add_connection_arguments(group)
    group.add_argument(
        "--reconnect-attempts",
        type=non_negative_int,
        default=ReconnectPolicy.max_attempts,
        metavar="N",
        help="tries to resume after a dropped connection (0: none; default: %(default)s)",
    )
    group.add_argument(
        "--reconnect-timeout",
        type=non_negative_float,
        default=ReconnectPolicy.max_elapsed_s,
        metavar="SECONDS",
        help="give up resuming after this long (default: %(default)s)",
    )


def _configure_safety(group: argparse._ArgumentGroup) -> None:
    estop = group.add_mutually_exclusive_group()
    estop.add_argument(
        "--estop-hotkey",
        default=DEFAULT_EMERGENCY_STOP,
        metavar="CHORD",
        help="global hotkey that stops the session at once (default: %(default)s)",
    )
    estop.add_argument(
        "--no-estop", action="store_true", help="no emergency-stop hotkey (Ctrl-C still stops)"
    )
    group.add_argument(
        "--no-fail-safe",
        action="store_true",
        help="do not stop when the pointer is pushed into a display corner",
    )
    group.add_argument(
        "--allow",
        type=_kinds,
        action="append",
        metavar="KIND[,KIND...]",
        help="allow only these action kinds (repeatable; done and fail always are)",
    )
    group.add_argument(
        "--deny-chord",
        action="append",
        default=[],
        metavar="CHORD",
        help="also refuse this key chord, e.g. alt+f4 (repeatable)",
    )
    group.add_argument(
        "--no-default-denylist",
        action="store_true",
        help=f"drop the built-in denied chords ({', '.join(DEFAULT_DENIED_CHORDS[:5])}, ...)",
    )
    group.add_argument(
        "--max-rate",
        type=non_negative_float,
        default=DEFAULT_MAX_ACTIONS_PER_SECOND,
        metavar="ACTIONS_PER_S",
        help="actions per second at most; more wait (0: no limit; default: %(default)s)",
    )
    group.add_argument(
        "--max-type-rate",
        type=non_negative_float,
        default=DEFAULT_MAX_CHARS_PER_SECOND,
        metavar="CHARS_PER_S",
        help="typed characters per second at most; more wait (0: no limit; default: %(default)s)",
    )
    group.add_argument(
        "--max-type-chars",
        type=non_negative_int,
        default=DEFAULT_MAX_TYPE_CHARS,
        metavar="N",
        help="refuse a type action longer than this (0: no limit; default: %(default)s)",
    )
    group.add_argument(
        "--max-batch",
        type=non_negative_int,
        default=DEFAULT_MAX_BATCH_ACTIONS,
        metavar="N",
        help=f"refuse a step of more actions than this (1-{MAX_ACTIONS}; default: %(default)s)",
    )
    group.add_argument(
        "--confirm", action="store_true", help="ask on the terminal before every action"
    )
    group.add_argument(
        "--redact",
        type=_region,
        action="append",
        default=[],
        metavar="X,Y,W,H",
        help="black out this desktop region in every frame sent (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    task = " ".join(args.task).strip()
    if not task:
        return command_error("run", "the task is empty")
    if not args.server:
        return command_error("run", NO_SERVER)
    printer = JsonPrinter() if args.json else Printer()
    try:
        options = session_options(args, printer)
        check_settings(args.server, options.channel)
        opening = url_options(args.backend, args.url)
    except (CredentialsError, ChannelError, ValueError) as error:
        return command_error("run", str(error))
    try:
        backend = open_backend(args.backend, **opening)
    except PlatformError as error:
        print(f"holodesk: {error}", file=sys.stderr)
        return ExitCode.BACKEND_UNAVAILABLE
    try:
        return _run(args, task, backend, options, printer)
    finally:
        backend.close()


def session_options(
    args: argparse.Namespace, printer: Printer | JsonPrinter | None = None
) -> SessionOptions:
    """The session's settings from the command line; ValueError (or kin) if inconsistent."""
    printer = printer or Printer()
    channel = read_channel_settings(args)
    denied = (() if args.no_default_denylist else DEFAULT_DENIED_CHORDS) + tuple(args.deny_chord)
    allowed = frozenset(kind for group in args.allow for kind in group) if args.allow else None
    safety = SafetySettings(
        emergency_stop=None if args.no_estop else args.estop_hotkey,
        fail_safe=not args.no_fail_safe,
        allowed_kinds=allowed,
        denied_chords=denied,
        max_actions_per_second=args.max_rate,
        max_chars_per_second=args.max_type_rate,
        max_type_chars=args.max_type_chars,
        max_batch_actions=args.max_batch,
        confirm=terminal_confirm if args.confirm else None,
        redact=tuple(args.redact),
    )
    reconnect = ReconnectPolicy(
        max_attempts=args.reconnect_attempts, max_elapsed_s=args.reconnect_timeout
    )
    return SessionOptions(
        display=args.display,
        max_steps=args.max_steps,
        policy=args.policy,
        on_started=printer.started,
        on_step=printer.step,
        on_notice=printer.notice,
        record_dir=args.record,
        channel=channel,
        reconnect=reconnect,
        safety=safety,
    )


def _run(
    args: argparse.Namespace,
    task: str,
    backend: Backend,
    options: SessionOptions,
    printer: Printer | JsonPrinter,
) -> int:
    if args.display is not None and args.display != ALL_DISPLAYS:
        try:
            find_display(backend.screen.displays(), args.display)
        except CaptureError as error:
            return command_error("run", str(error))
    try:
        outcome = asyncio.run(_stopped_by_sigterm(run_session(args.server, task, backend, options)))
    except (KeyboardInterrupt, asyncio.CancelledError):
        # A second Ctrl-C or SIGTERM during the cancel handshake; backend.close()
        # releases input.
        print("holodesk: interrupted", file=sys.stderr)
        return ExitCode.CANCELLED
    printer.outcome(outcome)
    if outcome.recording and not args.json:  # --json: the outcome event names it
        print(f"recorded in {outcome.recording}")
    return for_outcome(outcome.outcome)


async def _stopped_by_sigterm(session: Coroutine[Any, Any, T]) -> T:
    """Run the session; SIGTERM (systemd stopping the unit, `kill`) cancels it as Ctrl-C
    does under asyncio.run: the session stops input, releases it, tells the daemon and
    ends CANCELLED (exit 3), instead of the process dying mid-action (exit 143)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    try:
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    except (NotImplementedError, RuntimeError):  # Windows' loops take no signal handlers
        return await session
    try:
        return await session
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGTERM)


COMMAND = Command(
    name="run",
    help="run one agent session on this desktop",
    configure=configure,
    run=run,
)
