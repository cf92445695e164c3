"""`holodesk`: the client's command line, one subcommand per module.

To add a subcommand, write a module exposing `COMMAND = Command(...)` and list it
in COMMAND_MODULES (e.g. the lead's `holodesk demo`).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from holodesk.client.exit_codes import ExitCode

COMMAND_MODULES: tuple[str, ...] = ("holodesk.client.run_command", "holodesk.client.demo.command")


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    # Returns the process exit status.
    run: Callable[[argparse.Namespace], int]
    description: str = ""


def load_commands(modules: Sequence[str] = COMMAND_MODULES) -> list[Command]:
    commands: list[Command] = []
    for name in modules:
        command = importlib.import_module(name).COMMAND
        if not isinstance(command, Command):
            raise TypeError(f"{name}.COMMAND is not a holodesk.client.cli.Command")
        commands.append(command)
    return commands


def build_parser(commands: Sequence[Command]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="holodesk",
        description="Run computer-use agents on this desktop, driven by a holodesk daemon.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in commands:
        sub = subparsers.add_parser(
            command.name, help=command.help, description=command.description or command.help
        )
        command.configure(sub)
        sub.set_defaults(handler=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(load_commands())
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        # argparse exits 2 on bad usage, 0 after --help; return it so main() is testable.
        return exit_.code if isinstance(exit_.code, int) else int(ExitCode.USAGE)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)
