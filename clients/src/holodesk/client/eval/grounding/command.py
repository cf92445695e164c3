"""`holodesk eval grounding BENCHMARK PATH --server HOST:PORT --out RUN_DIR`."""

from __future__ import annotations

import argparse
from pathlib import Path

from holodesk.client.argtypes import positive_float, positive_int
from holodesk.client.cli import Command, command_error
from holodesk.client.connection_args import add_connection_arguments, add_server_argument


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("benchmark", metavar="BENCHMARK", help="the benchmark's name")
    parser.add_argument("path", type=Path, metavar="PATH", help="the data set, in its layout")
    add_server_argument(parser)
    parser.add_argument(
        "--out", type=Path, required=True, metavar="RUN_DIR", help="the run's folder"
    )
    parser.add_argument(
        "-k",
        "--concurrency",
        type=positive_int,
        default=8,
        metavar="K",
        help="Locate requests in flight (default: %(default)s)",
    )
    parser.add_argument("--limit", type=positive_int, metavar="N", help="the first N samples")
    parser.add_argument(
        "--resume", action="store_true", help="finish the run in RUN_DIR (same manifest)"
    )
    parser.add_argument(
        "--on-problem",
        choices=("skip", "stop"),
        default="skip",
        help="a sample that does not match its layout: leave it out, or stop (default: "
        "%(default)s)",
    )
    parser.add_argument("--policy", default="", help="daemon policy (default: the daemon's)")
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=300.0,
        metavar="SECONDS",
        help="per request (default: %(default)s)",
    )
    add_connection_arguments(parser.add_argument_group("connection"))


def run(args: argparse.Namespace) -> int:
    return command_error("eval grounding", "not built yet")


COMMAND = Command(
    name="grounding",
    help="run a grounding benchmark through Locate and score it by its own rule",
    configure=configure,
    run=run,
)
