"""`holodesk`: the client's command line, one subcommand per module.

To add a subcommand, write a module exposing `COMMAND = Command(...)` and list it
in COMMAND_MODULES (e.g. the lead's `holodesk demo`).

Other distributions add subcommands through the entry-point group
`holodesk.commands` (the daemon's `holodesk model check` does): each entry point
names an object with `name`, `help`, `configure(parser)` and `run(args) -> int`
(see `CommandLike`), so a distribution need not import this module. The CLI
imports nothing of theirs until it loads the entry points at startup; one that
fails to load is reported on stderr and skipped.

Option defaults come from a TOML file (config_file.py, docs/configuration.md),
read into the parsers before parsing so that flags still win; `holodesk config
path` shows that file and every effective value.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points, version
from typing import Protocol, TextIO, runtime_checkable

from holodesk.client import config_file
from holodesk.client.exit_codes import ExitCode
from holodesk.client.shown import shown
from holodesk.data.cli_config import ConfigFileError, add_config_argument

COMMAND_MODULES: tuple[str, ...] = (
    "holodesk.client.run.command",
    "holodesk.client.demo.command",
    "holodesk.client.service.command",
    "holodesk.client.tray.command",
    "holodesk.client.export.command",
    "holodesk.client.report.command",
    "holodesk.client.replay.command",
    "holodesk.client.doctor.command",
    "holodesk.client.locate.command",
    "holodesk.client.attach.command",
    "holodesk.client.eval.command",
    "holodesk.client.rollouts.command",
)
ENTRY_POINT_GROUP = "holodesk.commands"


@runtime_checkable
class CommandLike(Protocol):
    """What a subcommand provides; `description` is optional (defaults to `help`)."""

    @property
    def name(self) -> str: ...

    @property
    def help(self) -> str: ...

    @property
    def configure(self) -> Callable[[argparse.ArgumentParser], None]: ...

    @property
    def run(self) -> Callable[[argparse.Namespace], int]: ...


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    # Returns the process exit status.
    run: Callable[[argparse.Namespace], int]
    description: str = ""


def command_error(command: str, message: object, code: int = ExitCode.USAGE) -> int:
    """Say on stderr why `holodesk <command>` stopped; returns its exit status.

    The message may quote a daemon or a recording: it is printed inert (`shown`)."""
    print(shown(f"holodesk {command}: error: {message}"), file=sys.stderr)
    return code


def load_commands(
    modules: Sequence[str] = COMMAND_MODULES,
    group: str | None = ENTRY_POINT_GROUP,
    *,
    stderr: TextIO | None = None,
) -> list[CommandLike]:
    """The built-in commands, then those of the entry-point group (None: none)."""
    commands: list[CommandLike] = []
    for name in modules:
        command = importlib.import_module(name).COMMAND
        if not isinstance(command, Command):
            raise TypeError(f"{name}.COMMAND is not a holodesk.client.cli.Command")
        commands.append(command)
    if group is not None:
        taken = {c.name for c in commands}
        for command in entry_point_commands(group, stderr=stderr):
            if command.name in taken:
                _warn(stderr, f"ignoring a second command named {command.name!r}")
                continue
            taken.add(command.name)
            commands.append(command)
    return commands


def entry_point_commands(
    group: str = ENTRY_POINT_GROUP, *, stderr: TextIO | None = None
) -> list[CommandLike]:
    """Commands from installed distributions; broken ones are reported and skipped,
    so one bad plugin never takes the whole CLI down."""
    found: list[CommandLike] = []
    for entry in sorted(entry_points(group=group), key=lambda e: (e.name, e.value)):
        try:
            command = entry.load()
        except Exception as exc:
            _warn(stderr, f"cannot load the {entry.name!r} command ({entry.value}): {exc}")
            continue
        problem = command_problem(command)
        if problem:
            _warn(stderr, f"the {entry.name!r} command ({entry.value}) {problem}")
            continue
        found.append(command)
    return found


def command_problem(candidate: object) -> str:
    """Why `candidate` is not a usable command ("" when it is)."""
    if not isinstance(candidate, CommandLike):
        missing = [a for a in ("name", "help", "configure", "run") if not hasattr(candidate, a)]
        return f"is a {type(candidate).__name__} without {', '.join(missing)}"
    if not isinstance(candidate.name, str) or not candidate.name:
        return "has no name"
    if not callable(candidate.configure) or not callable(candidate.run):
        return "has a configure or run that cannot be called"
    return ""


def build_parser(commands: Sequence[CommandLike]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="holodesk",
        description="Run computer-use agents on this desktop, driven by a holodesk daemon.",
    )
    parser.add_argument(
        "--version", action="version", version=f"holodesk {version('holodesk-client')}"
    )
    add_config_argument(
        parser,
        f"TOML file of option defaults, a [table] per command (default: "
        f"${config_file.ENV_VAR}, else {config_file.default_path()}; see config path)",
    )
    # Not required=True: argparse checks required arguments before it reports the
    # flags it does not know, so `holodesk --bogus` would say only that COMMAND is
    # required; main() asks for the command after the flags have been judged.
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_config_command(subparsers)
    for command in commands:
        description = getattr(command, "description", "") or command.help
        sub = subparsers.add_parser(command.name, help=command.help, description=description)
        command.configure(sub)
        sub.set_defaults(handler=command.run)
    return parser


def _add_config_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    description = (
        "Show the config file holodesk reads (its path and why that one) and every "
        "option's value from it or the defaults, as TOML with a table per command; "
        "values of keys named token, password or secret are masked."
    )
    config = subparsers.add_parser(
        "config", help="show the config file and the values it sets", description=description
    )
    config.add_argument("config_action", choices=["path"], metavar="path")


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(load_commands())
    try:
        source, settings = config_file.load_into(parser, arguments)
    except ConfigFileError as exc:
        print(shown(f"holodesk: error: {exc}"), file=sys.stderr)
        return ExitCode.USAGE
    try:
        args = parser.parse_args(arguments)
        if args.command is None:
            parser.error("the following arguments are required: COMMAND")
    except SystemExit as exit_:
        # argparse exits 2 on bad usage, 0 after --help; return it so main() is testable.
        return exit_.code if isinstance(exit_.code, int) else int(ExitCode.USAGE)
    if args.command == "config":
        print(config_file.report(source, parser, settings), end="")
        return ExitCode.SUCCEEDED
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


def _warn(stderr: TextIO | None, message: str) -> None:
    print(f"holodesk: {message}", file=stderr or sys.stderr)
