"""`holodesk mcp`: serve this desktop to MCP hosts; `holodesk mcp install HOST`.

    holodesk mcp                                   # stdio: what a host starts
    holodesk mcp --http 127.0.0.1:8765             # streamable HTTP at /mcp
    holodesk mcp install claude-desktop|claude-code|cursor [--print] [--scope user|project]

The server takes `holodesk run`'s own flags (the daemon and its credentials, the
backend, the display, and every safety flag) through run.command's parsers, so the
MCP tools and `holodesk run` are held to the same rules by the same code.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import platformdirs

from holodesk.client.argtypes import non_negative_int
from holodesk.client.backend_args import add_backend_arguments
from holodesk.client.cli import Command, command_error
from holodesk.client.connection_args import add_server_argument
from holodesk.client.exit_codes import ExitCode
from holodesk.client.mcp import install as installing
from holodesk.client.mcp.address import DEFAULT_HTTP_PORT
from holodesk.client.run.command import _configure_connection, _configure_safety


def default_record_root() -> Path:
    """Where run_task records its sessions (and their reports) unless --record says."""
    return platformdirs.user_data_path("holodesk") / "mcp-recordings"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        help=f"serve streamable HTTP at http://HOST:PORT/mcp instead of stdio "
        f"(e.g. 127.0.0.1:{DEFAULT_HTTP_PORT}; port 0 picks a free one)",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="let --http bind a non-loopback address (it has no authentication: "
        "anyone who reaches it drives this desktop)",
    )
    add_server_argument(parser)
    add_backend_arguments(parser, url_help="web backend: the page to open")
    parser.add_argument(
        "--display",
        metavar="DISPLAY_ID|all",
        help="the display run_task shows the agent (default: primary)",
    )
    parser.add_argument(
        "--max-steps",
        type=non_negative_int,
        default=0,
        help="run_task's step limit (0: the daemon's default)",
    )
    parser.add_argument("--policy", default="", help="daemon policy (default: the daemon's)")
    parser.add_argument(
        "--record",
        type=Path,
        metavar="DIR",
        help=f"where run_task records sessions and writes their reports "
        f"(default: {default_record_root()})",
    )
    _configure_connection(parser.add_argument_group("connection"))
    _configure_safety(parser.add_argument_group("safety (as holodesk run)"))

    actions = parser.add_subparsers(dest="mcp_action", metavar="install")
    add = actions.add_parser(
        "install",
        help="add holodesk to an MCP host's configuration",
        description="Add (or replace) the holodesk server in Claude Desktop's, Claude Code's "
        "or Cursor's configuration file; everything else in the file is kept. Hosts start "
        "servers with only a few environment variables, so the entry records those through "
        "which this shell finds its desktop (DISPLAY, XAUTHORITY, WAYLAND_DISPLAY, "
        "XDG_RUNTIME_DIR, ...): run it from a terminal of the desktop to drive.",
    )
    add.add_argument("host", choices=installing.HOSTS, help="the MCP host")
    _add_install_options(add, default=None)
    add.add_argument(
        "server_args",
        nargs=argparse.REMAINDER,
        metavar="-- FLAG",
        help="flags for `holodesk mcp` when the host starts it, after --, "
        "e.g. -- --server gpu-host:50051 --token-file ~/.holodesk/token",
    )


def _add_install_options(
    parser: argparse.ArgumentParser, default: object = argparse.SUPPRESS
) -> None:
    """install's own options; parsed again from what follows HOST (argparse's
    REMAINDER takes everything after it), so they may come before or after it."""
    parser.add_argument(
        "--print",
        dest="print_only",
        action="store_true",
        default=False if default is None else default,
        help="show the configuration and where it goes, without writing anything",
    )
    parser.add_argument(
        "--scope",
        choices=installing.SCOPES,
        default="user" if default is None else default,
        help="user: every project (default); project: this folder's .mcp.json "
        "(Claude Code) or .cursor/mcp.json (Cursor)",
    )
    parser.add_argument(
        "--name",
        default=installing.DEFAULT_NAME if default is None else default,
        help="the server's name there",
    )
    parser.add_argument(
        "--env",
        action="append",
        metavar="KEY=VALUE",
        default=[] if default is None else default,
        help="a variable for the server's environment, over what this shell has "
        "(e.g. --env DISPLAY=:0 to name the display from an SSH shell); repeatable",
    )


def _split_install_args(args: argparse.Namespace) -> list[str]:
    """Parse install's options that came after HOST into `args`; return the server's
    flags, checked to start `holodesk mcp` (ValueError says why not).

    argparse hands everything after HOST over as one list, and drops a `--` that
    comes right after HOST, so the list is split here: install's own options
    (--print, --scope, --name, --env: no `holodesk mcp` flag has these names) are taken
    out, and the rest must be flags `holodesk mcp` accepts."""
    rest = list(args.server_args)
    later = argparse.ArgumentParser(prog="holodesk mcp install", add_help=False)
    _add_install_options(later)
    try:
        if "--" in rest:
            cut = rest.index("--")
            later.parse_args(rest[:cut], namespace=args)
            server_args = rest[cut + 1 :]
        else:
            _, server_args = later.parse_known_args(rest, namespace=args)
    except SystemExit:
        raise ValueError(f"cannot read {' '.join(rest)!r}") from None
    serve = argparse.ArgumentParser(prog="holodesk mcp", add_help=False)
    configure(serve)
    try:
        serve.parse_args(server_args)
    except SystemExit:
        raise ValueError(
            f"holodesk mcp would not start with {' '.join(server_args)!r} "
            "(flags for the server go after --, e.g. -- --server HOST:PORT)"
        ) from None
    return server_args


def run(args: argparse.Namespace) -> int:
    if args.mcp_action == "install":
        return _install(args)
    # The MCP SDK and the backends load only here: every `holodesk` command builds
    # this parser at startup, and the SDK alone took 0.5 s to import.
    from holodesk.client.mcp.serve import serve

    return serve(args, args.record or default_record_root())


def _install(args: argparse.Namespace) -> int:
    try:
        server_args = _split_install_args(args)
    except ValueError as error:
        return command_error("mcp install", error)
    try:
        env = installing.desktop_env(os.environ, args.env)
    except ValueError as error:
        return command_error("mcp install", error)
    entry = installing.server_entry(server_args, env)
    try:
        path = installing.config_path(args.host, args.scope)
        if args.print_only:
            print(f"# {path}")
            print(installing.shown_config(args.host, entry, args.name))
            if args.host == "claude-code":
                print(f"# or: {installing.claude_mcp_add(entry, args.scope, args.name)}")
            return ExitCode.SUCCEEDED
        replaced = installing.install(args.host, path, entry, args.name)
    except installing.InstallError as error:
        return command_error("mcp install", error, ExitCode.FAILED)
    done = f"updated {args.name!r} in" if replaced else f"added {args.name!r} to"
    print(f"{done} {path}; restart {args.host} to load it")
    print(installing.env_summary(entry.env))
    return ExitCode.SUCCEEDED


COMMAND = Command(
    name="mcp",
    help="serve this desktop to MCP hosts (Claude Desktop, Claude Code, Cursor); "
    "`mcp install HOST` configures one",
    description=(
        "An MCP server (stdio, or streamable HTTP with --http) with tools to take "
        "screenshots, click, type, press keys, scroll, drag and move in screen pixels, "
        "locate elements through the daemon and run whole tasks through it. Every "
        "action passes the same safety guard as `holodesk run`, with the same flags."
    ),
    configure=configure,
    run=run,
)
