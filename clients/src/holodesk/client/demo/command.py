"""`holodesk demo`: a virtual desktop, a form app, the daemon and a client, end to end.

The daemon runs as a separate process (`python -m holodesk.daemon.cli`), exactly as
it would on a GPU host, so the client never imports daemon code. With no GPU, the
daemon serves the OCR-grounded CPU baseline policy.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from holodesk.client.cli import Command
from holodesk.client.demo.processes import FormAppProcess, launch_daemon
from holodesk.client.exit_codes import ExitCode, for_outcome
from holodesk.client.render import Printer
from holodesk.client.session import SessionOptions, run_session
from holodesk.platform.errors import PlatformError
from holodesk.platform.select import open_backend
from holodesk.platform.virtual_display import VirtualDisplay

DEFAULT_NAME = "héllo wörld ñ € 日本"
DEFAULT_TASK = f'type "{DEFAULT_NAME}" into "Name"; click "Submit"; answer "signed up"'


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--task", default=DEFAULT_TASK, help="task for the OCR baseline (default: %(default)s)"
    )
    parser.add_argument(
        "--display", help="an X display to use, e.g. :0 (default: start a private Xvfb)"
    )
    parser.add_argument("--policy", default="ocr", help="daemon policy (default: %(default)s)")
    parser.add_argument("--max-steps", type=int, default=12, help="step limit (default: 12)")


def run(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("holodesk.daemon") is None:
        print(
            "holodesk demo: the daemon is not installed here; install holodesk-daemon "
            "(or run `uv sync` in the holodesk repository)",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    with ExitStack() as stack:
        try:
            display = args.display or stack.enter_context(VirtualDisplay()).display
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="holodesk-")))
            app = stack.enter_context(FormAppProcess(display, workdir / "form-state.json"))
            backend = open_backend("x11", display=display)
            stack.callback(backend.close)
            # The emergency-stop hotkey listens on $DISPLAY (pynput reads it): the
            # demo's desktop, not whatever terminal started it.
            stack.enter_context(_display_env(display))
        except PlatformError as error:
            print(f"holodesk demo: {error}", file=sys.stderr)
            return ExitCode.BACKEND_UNAVAILABLE
        print(f"display {display}: form app started", file=sys.stderr)
        daemon = stack.enter_context(launch_daemon(args.policy, workdir / "holodeskd.log"))
        print(f"holodeskd ({args.policy} policy) listening on {daemon.address}", file=sys.stderr)
        print(f"task: {args.task}", file=sys.stderr)
        printer = Printer()
        options = SessionOptions(
            max_steps=args.max_steps,
            on_started=printer.started,
            on_step=printer.step,
            on_notice=printer.notice,
        )
        outcome = asyncio.run(run_session(daemon.address, args.task, backend, options))
        printer.outcome(outcome)
        state = app.state()
        print(f"the app received: name={state.get('name')!r}, submitted={state.get('submitted')!r}")
        return for_outcome(outcome.outcome)
    return ExitCode.FAILED  # unreachable: ExitStack does not swallow exceptions


COMMAND = Command(
    name="demo",
    help="run the whole stack on a virtual desktop with the CPU baseline policy",
    configure=configure,
    run=run,
)


@contextmanager
def _display_env(display: str) -> Iterator[None]:
    before = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = display
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("DISPLAY", None)
        else:
            os.environ["DISPLAY"] = before
