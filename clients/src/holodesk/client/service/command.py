"""`holodesk service install|uninstall|status`: the client as a per-user service.

The service runs `holodesk tray` in the user's graphical session (systemd --user,
a launchd LaunchAgent, a Windows logon task: the platform layer picks which), so
the client starts at login with the connection settings given here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from holodesk.client.cli import Command
from holodesk.client.connection_args import SERVER_ENV, add_server_argument
from holodesk.client.exit_codes import ExitCode
from holodesk.platform.services.runner import ServiceError
from holodesk.platform.services.select import ServiceManager, service_manager
from holodesk.platform.services.spec import ServiceSpec
from holodesk.proto.defaults import DEFAULT_ADDRESS

DEFAULT_NAME = "holodesk-client"


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="service_action", metavar="ACTION", required=True)
    install = actions.add_parser("install", help="install and start the client service")
    add_server_argument(
        install,
        f"the daemon the tray client talks to, written into the service (default: "
        f"${SERVER_ENV}, else {DEFAULT_ADDRESS})",
    )
    for flag, what in (
        ("--token-file", "file holding the bearer token"),
        ("--ca-cert", "PEM roots to verify the daemon's TLS certificate"),
        ("--client-cert", "mTLS: this client's certificate (PEM)"),
        ("--client-key", "mTLS: this client's private key (PEM)"),
    ):
        install.add_argument(flag, type=Path, help=what)
    install.add_argument(
        "--dry-run",
        action="store_true",
        help="print the service definition and change nothing",
    )
    for action in ("uninstall", "status"):
        actions.add_parser(action, help=f"{action} the client service")
    for sub in actions.choices.values():
        sub.add_argument("--name", default=DEFAULT_NAME, help="service name (default: %(default)s)")


def client_argv(args: argparse.Namespace) -> tuple[str, ...]:
    """What the service runs: this interpreter's client, so a venv install keeps working."""
    argv = [sys.executable, "-m", "holodesk.client", "tray", "--server", args.server]
    for flag in ("token_file", "ca_cert", "client_cert", "client_key"):
        value: Path | None = getattr(args, flag)
        if value is not None:
            # Absolute: the service does not start in the directory this ran in.
            argv += [f"--{flag.replace('_', '-')}", str(value.expanduser().resolve())]
    return tuple(argv)


def run(args: argparse.Namespace, manager: ServiceManager | None = None) -> int:
    try:
        manager = manager or service_manager()
        if args.service_action == "install":
            return _install(args, manager)
        if args.service_action == "uninstall":
            manager.uninstall(args.name)
            print(f"removed the {manager.kind} {args.name}")
            return int(ExitCode.SUCCEEDED)
        status = manager.status(args.name)
    except (ServiceError, ValueError) as exc:
        print(f"holodesk service: {exc}", file=sys.stderr)
        return int(ExitCode.FAILED)
    where = f" ({status.path})" if status.path else ""
    pid = f", pid {status.pid}" if status.pid else ""
    print(f"{args.name}: {status.detail}{pid}{where}")
    return int(ExitCode.SUCCEEDED if status.running else ExitCode.FAILED)


def _install(args: argparse.Namespace, manager: ServiceManager) -> int:
    if not args.server:
        print("holodesk service: --server is empty: give HOST:PORT", file=sys.stderr)
        return int(ExitCode.USAGE)
    spec = ServiceSpec(
        name=args.name,
        description=f"holodesk client (tray) for the daemon at {args.server}",
        argv=client_argv(args),
    )
    if args.dry_run:
        print(manager.render(spec), end="")
        return int(ExitCode.SUCCEEDED)
    path = manager.install(spec)
    print(f"installed and started the {manager.kind} {spec.name}: {path}")
    return int(ExitCode.SUCCEEDED)


COMMAND = Command(
    name="service",
    help="install, remove or inspect the client as a per-user service",
    configure=configure,
    run=run,
    description=__doc__ or "",
)
