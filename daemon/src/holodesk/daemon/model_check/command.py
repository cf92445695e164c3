"""`holodesk model check`, registered with the client CLI through the entry point
`holodesk.commands` (daemon/pyproject.toml).

This module stays light (argparse only): the CLI imports it at startup for every
`holodesk` invocation; engines, torch and vLLM load only when a check runs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ENGINES = ("vllm", "transformers", "openai")


@dataclass(frozen=True)
class ModelCommand:
    """Shaped like the client's Command (name, help, configure, run), which the
    daemon does not import."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="model_command", metavar="SUBCOMMAND", required=True)
    check = actions.add_parser(
        "check",
        help="render the model's chat template with a dialect and run one localization "
        "and one navigation step on a bundled screenshot",
        description="Checks that a model answers in its dialect's format: renders the model's "
        "own chat template with the dialect's messages, then runs one Locate and one "
        "navigation step on a bundled 1280x800 screenshot whose target (a Submit button) is "
        "known. Exits 0 only if both answers parse and both clicks land on the target.",
    )
    check.add_argument("--model", required=True, help="hub id or folder of the checkpoint")
    check.add_argument(
        "--engine", choices=ENGINES, default="vllm", help="engine to run it (default vllm)"
    )
    check.add_argument(
        "--dialect",
        help="built-in dialect (default: the daemon's default), or 'auto': try every "
        "built-in dialect unconstrained on the bundled screenshots, report each one's parse "
        "and click-landing rates and write the winner as a dialect file (--dialect-out)",
    )
    check.add_argument(
        "--dialect-out",
        default="holodesk-dialect.toml",
        metavar="PATH",
        help="with --dialect auto: where the winning dialect file goes (default "
        "./holodesk-dialect.toml; start holodeskd with --policy-opt dialect_file=PATH)",
    )
    check.add_argument(
        "--data",
        metavar="BENCHMARK:PATH",
        help="with --dialect auto: also locate the first samples of this grounding data set "
        "(e.g. screenspot-v2:~/data/ScreenSpot-v2) with every dialect, scored by the "
        "benchmark's own rule and counted in the parse and click-landing rates",
    )
    check.add_argument(
        "--data-limit",
        type=int,
        default=50,
        metavar="N",
        help="with --data: how many of its samples each dialect locates (default 50)",
    )
    check.add_argument("--dialect-file", help="JSON/TOML dialect file overriding a built-in")
    check.add_argument(
        "--policy-opt",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="policy/engine option, as for holodeskd (repeatable), e.g. base_url=... for "
        "openai, tensor_parallel_size=2 for vllm, device=cuda for transformers",
    )
    check.add_argument("--tokenizer", help="where the chat template comes from (default: --model)")
    check.add_argument(
        "--parse-retries",
        type=int,
        default=0,
        help="repair attempts after unparseable output (default 0: judge the first answer)",
    )
    check.add_argument(
        "--no-template", action="store_true", help="skip part (a), the chat-template check"
    )
    check.set_defaults(model_handler=run_check_command)


def run(args: argparse.Namespace) -> int:
    handler: Callable[[argparse.Namespace], int] = args.model_handler
    return handler(args)


def run_check_command(args: argparse.Namespace) -> int:
    from holodesk.daemon.model_check.check import CheckOptions, Exit, run_check

    options: dict[str, str] = {}
    for item in args.policy_opt:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            print(f"holodesk model check: --policy-opt {item!r} is not KEY=VALUE", file=sys.stderr)
            return int(Exit.USAGE)
        options[key.strip()] = value
    if args.dialect and args.dialect != "auto":
        options["dialect"] = args.dialect
    if args.dialect_file:
        options["dialect_file"] = args.dialect_file
    try:
        check = CheckOptions(
            model=args.model,
            engine=args.engine,
            policy_options=options,
            tokenizer=args.tokenizer,
            parse_retries=args.parse_retries,
            template=not args.no_template,
        )
    except ValueError as exc:
        print(f"holodesk model check: {exc}", file=sys.stderr)
        return int(Exit.USAGE)
    if args.data and args.dialect != "auto":
        print("holodesk model check: --data goes with --dialect auto", file=sys.stderr)
        return int(Exit.USAGE)
    if args.dialect == "auto":
        if args.dialect_file:
            print(
                "holodesk model check: --dialect auto chooses the dialect; drop --dialect-file",
                file=sys.stderr,
            )
            return int(Exit.USAGE)
        from holodesk.daemon.model_check.auto import run_auto
        from holodesk.daemon.model_check.data import DataError, load_data

        data = None
        if args.data:
            try:
                data = load_data(args.data, args.data_limit)
            except DataError as exc:
                print(f"holodesk model check: {exc}", file=sys.stderr)
                return int(Exit.USAGE)
        auto = asyncio.run(run_auto(check, Path(args.dialect_out), data=data))
        return int(auto.exit)
    result = asyncio.run(run_check(check))
    return int(result.exit)


COMMAND = ModelCommand(
    name="model",
    help="model tools for a GPU host (model check)",
    configure=configure,
    run=run,
    description="Tools for the policy model served by a holodesk daemon.",
)
