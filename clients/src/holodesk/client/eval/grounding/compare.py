"""`holodesk eval compare RUN_A RUN_B`: two grounding runs side by side."""

from __future__ import annotations

import argparse
from pathlib import Path

from holodesk.client.cli import Command, command_error


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", type=Path, metavar="RUN_A")
    parser.add_argument("run_b", type=Path, metavar="RUN_B")
    parser.add_argument(
        "--force",
        action="store_true",
        help="compare even when the manifests differ (the differences are still printed)",
    )


def run(args: argparse.Namespace) -> int:
    return command_error("eval compare", "not built yet")


COMMAND = Command(
    name="compare",
    help="compare two grounding runs whose manifests say they are comparable",
    configure=configure,
    run=run,
)
