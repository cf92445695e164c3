"""`holodesk tray`: the client in the system tray (what `holodesk service install` runs).

Its menu starts a task, pauses and resumes, stops at once, opens the daemon's live
view and the last session's report, shows the daemon it talks to and switches
between daemons given as --server NAME=HOST:PORT.
"""

from __future__ import annotations

import argparse
import sys
import webbrowser
from pathlib import Path
from urllib.parse import urlsplit

from holodesk.client.channel import ChannelError, ChannelSettings, check_settings
from holodesk.client.cli import Command
from holodesk.client.connection_args import (
    SERVER_ENV,
    add_connection_arguments,
    default_server,
    read_channel_settings,
)
from holodesk.client.credentials import CredentialsError
from holodesk.client.exit_codes import ExitCode
from holodesk.client.session import SessionOptions
from holodesk.client.tray.ask import ask_in_subprocess
from holodesk.client.tray.controller import DEFAULT_LIVE_VIEW, TrayController
from holodesk.client.tray.reports import default_record_dir, report_for
from holodesk.client.tray.state import ServerProfile
from holodesk.platform.select import open_backend
from holodesk.proto.defaults import DEFAULT_ADDRESS


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--server",
        action="append",
        metavar="[NAME=]HOST:PORT",
        help=f"a daemon to offer in the menu, repeatable; the first is used at start "
        f"(default: ${SERVER_ENV}, else {DEFAULT_ADDRESS})",
    )
    parser.add_argument("--backend", help="platform backend (default: this OS's own)")
    parser.add_argument(
        "--record-dir",
        type=Path,
        default=default_record_dir(),
        help="where sessions are recorded, for their reports (default: %(default)s)",
    )
    parser.add_argument(
        "--live-view",
        type=live_view_url,
        default=DEFAULT_LIVE_VIEW,
        metavar="URL",
        help="the daemon's live view (holodeskd --web), opened by the menu's "
        "Open live view in $BROWSER or the system's browser (default: %(default)s)",
    )
    add_connection_arguments(parser.add_argument_group("connection"))


def live_view_url(value: str) -> str:
    """--live-view: an http(s) URL with a host, as `holodeskd --web` serves it; the
    browser would otherwise be handed a file path or a bare word."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an http(s) URL such as {DEFAULT_LIVE_VIEW}"
        )
    return value.strip()


def server_profiles(values: list[str], channel: ChannelSettings) -> list[ServerProfile]:
    profiles = []
    for value in values:
        name, _, address = value.rpartition("=")
        address = address.strip()
        if not address:
            raise ValueError(f"--server {value!r}: expected [NAME=]HOST:PORT")
        check_settings(address, channel)
        profiles.append(ServerProfile(name.strip() or address, address, channel))
    return profiles


def chosen_servers(given: list[str] | None) -> list[str]:
    """The --server values, else the default one. Not argparse's default: an "append"
    option adds what is given to its default, so $HOLODESK_SERVER came first."""
    return given or [default_server()]


def run(args: argparse.Namespace) -> int:
    servers = chosen_servers(args.server)
    try:
        channel = read_channel_settings(args)
        profiles = server_profiles(servers, channel)
    except (CredentialsError, ChannelError, ValueError) as error:
        print(f"holodesk tray: {error}", file=sys.stderr)
        return int(ExitCode.USAGE)
    try:
        # Qt comes with the `tray` extra; the rest of the CLI works without it.
        from holodesk.client.tray.icon import TrayIcon, TrayUnavailableError
    except ImportError as error:
        print(
            f"holodesk tray: {error} (install holodesk-client[tray] for Qt)",
            file=sys.stderr,
        )
        return int(ExitCode.BACKEND_UNAVAILABLE)
    icon: TrayIcon | None = None
    controller = TrayController(
        profiles,
        lambda: open_backend(args.backend),
        ask_task=ask_in_subprocess,
        open_path=lambda path: webbrowser.open(path.as_uri()),
        open_url=webbrowser.open,
        live_view_url=args.live_view,
        write_report=report_for,
        session_options=SessionOptions(record_dir=args.record_dir),
        on_change=lambda status: icon.show(status) if icon else None,
    )
    icon = TrayIcon(controller)
    try:
        icon.run()
    except TrayUnavailableError as error:
        controller.close()
        print(f"holodesk tray: {error}", file=sys.stderr)
        return int(ExitCode.BACKEND_UNAVAILABLE)
    return int(ExitCode.SUCCEEDED)


COMMAND = Command(
    name="tray",
    help="run the client in the system tray",
    configure=configure,
    run=run,
    description=__doc__ or "",
)
