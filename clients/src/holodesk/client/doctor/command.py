"""`holodesk doctor`: can this machine run agents? Every finding with its fix.

    holodesk doctor                                   # this desktop only
    holodesk doctor --server gpu-host:50051 --ca-cert ca.pem --token-file ~/.holodesk/token

Checks the display server, a capture (size, time, all black?), input (a pointer
query; --check-input moves it 1 px and back), OS permissions, the
emergency-stop hotkey, and, given a daemon, its TLS certificate, reachability
and round trip, the credentials, and the clock. Exit status 0 when nothing
failed (warnings allowed), 1 otherwise, 2 on bad usage. --json prints the
findings as a JSON list for scripts and the tray app.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from dataclasses import replace

from rich.console import Console
from rich.table import Table
from rich.text import Text

from holodesk.client.argtypes import positive_float
from holodesk.client.channel import (
    ChannelError,
    check_settings,
    host_of,
    is_loopback,
)
from holodesk.client.cli import Command
from holodesk.client.connection_args import (
    SERVER_ENV,
    add_connection_arguments,
    add_server_argument,
    channel_settings,
    default_server,
    server_named,
)
from holodesk.client.credentials import (
    CredentialsError,
    read_token_file,
)
from holodesk.client.doctor.daemon import (
    AUTH,
    DAEMON,
    DaemonOptions,
    check_daemon,
)
from holodesk.client.doctor.findings import Finding, Status, crashed, failed, guarded
from holodesk.client.doctor.machine import MachineOptions, check_machine
from holodesk.client.doctor.tls import TLS, WARN_DAYS, TlsOptions, check_tls
from holodesk.client.exit_codes import ExitCode
from holodesk.client.shown import shown
from holodesk.platform.safety.hotkeys import DEFAULT_EMERGENCY_STOP
from holodesk.proto.defaults import DEFAULT_ADDRESS

_STYLES = {Status.OK: "green", Status.WARN: "yellow", Status.FAIL: "bold red", Status.SKIP: "dim"}


def configure(parser: argparse.ArgumentParser) -> None:
    machine = parser.add_argument_group("this machine")
    machine.add_argument("--backend", help="platform backend (default: this OS's own)")
    machine.add_argument(
        "--check-input",
        action="store_true",
        help="also move the pointer 1 px and back (default: only query it, moving nothing)",
    )
    estop = machine.add_mutually_exclusive_group()
    estop.add_argument(
        "--estop-hotkey",
        default=DEFAULT_EMERGENCY_STOP,
        metavar="CHORD",
        help="the emergency-stop chord to check (default: %(default)s)",
    )
    estop.add_argument("--no-estop", action="store_true", help="do not check the hotkey")

    daemon = parser.add_argument_group("the daemon")
    add_server_argument(
        daemon,
        f"the daemon to check (default: ${SERVER_ENV}, else {DEFAULT_ADDRESS}, where no "
        "daemon is only a warning; '': daemon checks skipped)",
        resolve_default=False,
    )
    add_connection_arguments(daemon)
    daemon.add_argument(
        "--timeout",
        type=positive_float,
        default=5.0,
        metavar="SECONDS",
        help="per call to the daemon (default: %(default)s)",
    )
    daemon.add_argument(
        "--cert-warn-days",
        type=positive_float,
        default=WARN_DAYS,
        metavar="DAYS",
        help="warn when the daemon's certificate expires sooner (default: %(default)g)",
    )
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")


def _port(target: str) -> int:
    tail = target.rsplit(":", 1)[-1] if ":" in target.rsplit("]", 1)[-1] else ""
    return int(tail) if tail.isdigit() else 443  # gRPC's default for a bare host


def _tls_finding(args: argparse.Namespace, insecure: bool) -> Finding:
    target: str = args.server
    if target.startswith(("unix:", "unix-abstract:")):
        return Finding(TLS, Status.OK, "a Unix socket: guarded by its file permissions")
    if insecure:
        if is_loopback(target):
            return Finding(TLS, Status.OK, "plaintext to a daemon on this machine")
        return Finding(
            TLS,
            Status.WARN,
            f"plaintext to {host_of(target)} (--insecure): anyone on the path can watch and "
            "drive the session",
            "give the daemon --tls-cert/--tls-key and drop --insecure",
        )
    options = TlsOptions(
        host=host_of(target),
        port=_port(target),
        ca_cert=args.ca_cert,
        client_cert=args.client_cert,
        client_key=args.client_key,
        timeout_s=args.timeout,
        warn_days=args.cert_warn_days,
    )
    return check_tls(options)


def check_remote(args: argparse.Namespace) -> list[Finding]:
    """The TLS and daemon findings for `args` (all skipped with --server '').

    Without --server or $HOLODESK_SERVER the daemon on this machine is checked, and
    finding none there is a warning, not a failure: the client may be meant for a
    daemon elsewhere that nobody named yet."""
    named = server_named(args)
    if args.server is None:
        args = argparse.Namespace(**{**vars(args), "server": default_server()})
    if not args.server:
        return [Finding(DAEMON, Status.SKIP, "no daemon given (--server '')")]
    findings = _check_named_daemon(args)
    return findings if named else [_only_a_warning(f) for f in findings]


def _only_a_warning(finding: Finding) -> Finding:
    if finding.check != DAEMON or finding.status is not Status.FAIL:
        return finding
    return replace(
        finding,
        status=Status.WARN,
        detail=f"{finding.detail} (the default address: no --server given)",
        fix=f"start holodeskd on this machine, or pass --server HOST:PORT (or set "
        f"${SERVER_ENV}) for a daemon elsewhere",
    )


def _check_named_daemon(args: argparse.Namespace) -> list[Finding]:
    try:
        token = read_token_file(args.token_file) if args.token_file is not None else None
    except CredentialsError as error:
        fix = "point --token-file (or $HOLODESK_TOKEN_FILE) at the file holding the token"
        return [Finding(AUTH, Status.FAIL, str(error), fix)]
    settings = channel_settings(args, token)
    try:
        insecure = check_settings(args.server, settings)
    except ChannelError as error:
        fix = "correct the connection flags (holodesk doctor --help)"
        return [Finding(DAEMON, Status.FAIL, str(error), fix)]
    tls = guarded(TLS, _tls_finding, args, insecure)
    options = DaemonOptions(args.server, settings, timeout_s=args.timeout)
    try:
        daemon = asyncio.run(check_daemon(options))
    except Exception as error:  # its crash is a finding; the table still prints
        daemon = [crashed(DAEMON, error)]
    return [tls, *daemon]


def render(findings: Sequence[Finding], console: Console) -> None:
    table = Table(title="holodesk doctor", show_lines=True)
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("finding")
    table.add_column("fix")
    for finding in findings:
        style = _STYLES[finding.status]
        # Text, not markup: findings quote paths and errors, whose brackets are not markup;
        # shown(): they also quote the daemon (its version, policy names, errors).
        table.add_row(
            finding.check,
            Text(finding.status.value, style=style),
            Text(shown(finding.detail)),
            Text(shown(finding.fix)),
        )
    console.print(table)


def run(args: argparse.Namespace) -> int:
    machine = MachineOptions(
        backend=args.backend,
        check_input=args.check_input,
        hotkey=None if args.no_estop else args.estop_hotkey,
    )
    findings = [*check_machine(machine), *check_remote(args)]
    if args.json:
        print(json.dumps([f.as_dict() for f in findings], indent=2))
    else:
        render(findings, Console(file=sys.stdout, highlight=False))
    return int(ExitCode.FAILED if failed(findings) else ExitCode.SUCCEEDED)


COMMAND = Command(
    name="doctor",
    help="check this machine (display, capture, input, permissions) and the daemon",
    configure=configure,
    run=run,
)
