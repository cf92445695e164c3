"""`holodesk eval SUBCOMMAND`: benchmarks and task suites scored through the daemon.

Each subcommand is a module listed in SUBCOMMAND_MODULES exposing
`COMMAND = holodesk.client.cli.Command(name, help, configure, run)`, the same shape
as a top-level command; to add one, write the module and add its name here. Modules
are imported when the parser is built, so a subcommand's heavy imports belong inside
its `run`.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence

from holodesk.client.cli import Command

SUBCOMMAND_MODULES: tuple[str, ...] = (
    "holodesk.client.eval.grounding.command",
    "holodesk.client.eval.grounding.compare",
    "holodesk.client.eval.tasks.command",
)


def subcommands(modules: Sequence[str] = SUBCOMMAND_MODULES) -> list[Command]:
    """The subcommands, in the order listed."""
    found: list[Command] = []
    for name in modules:
        command = importlib.import_module(name).COMMAND
        if not isinstance(command, Command):
            raise TypeError(f"{name}.COMMAND is not a holodesk.client.cli.Command")
        found.append(command)
    return found


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="eval_command", metavar="SUBCOMMAND", required=True)
    for command in subcommands():
        sub = actions.add_parser(
            command.name, help=command.help, description=command.description or command.help
        )
        command.configure(sub)
        sub.set_defaults(eval_handler=command.run)


def run(args: argparse.Namespace) -> int:
    handler: Callable[[argparse.Namespace], int] = args.eval_handler
    return handler(args)


COMMAND = Command(
    name="eval",
    help="score the daemon's policy on grounding benchmarks or task suites",
    description="Score a policy the daemon serves: `eval grounding` runs a grounding "
    "benchmark (ScreenSpot-v2, ScreenSpot-Pro, OSWorld-G, GroundUI-1K, WebClick, "
    "Showdown) through Locate and scores it by the benchmark's own rule; `eval compare` "
    "compares two grounding runs whose manifests say they are comparable; `eval tasks` "
    "runs a task suite in OSWorld's format and scores each task by its evaluator.",
    configure=configure,
    run=run,
)
