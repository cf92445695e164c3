"""`holodeskd` command line: flags -> ServerConfig -> serve() until SIGTERM/SIGINT.

This module runs the process (signals, SIGHUP reload, the "listening" lines) and
routes the subcommands; the flags and flags -> ServerConfig are cli_flags.py
(re-exported here), `holodeskd token new --name N --role R` is cli_token.py, and
`holodeskd config path` shows the config file read (config_file.py) and its values.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence

from holodesk.daemon import config_file, gc_policy, logs
from holodesk.daemon.cli_flags import build_parser, config_from_args
from holodesk.daemon.cli_token import token_main
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import DialectConfigError
from holodesk.daemon.policies.registry import PolicyConfigError
from holodesk.daemon.rpc.credentials import CredentialsError
from holodesk.daemon.rpc.server import serve
from holodesk.data.cli_config import ConfigFileError, add_config_argument

__all__ = ["build_parser", "config_from_args", "config_main", "main", "run"]

log = logging.getLogger("holodeskd")


async def run(config: ServerConfig) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with serve(config) as running:

        def reload() -> None:
            try:
                running.reload_credentials()
            except (CredentialsError, OSError) as exc:
                log.error("SIGHUP: keeping the old credentials: %s", exc)

        loop.add_signal_handler(signal.SIGHUP, reload)
        print(f"holodeskd listening on {running.address}", flush=True)
        if running.web is not None:
            print(f"holodeskd live view on {running.web.url}", flush=True)
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({stopping, running.policies_started}, return_when="FIRST_COMPLETED")
        if running.policies_started.done():
            if running.policies_started.exception():
                stopping.cancel()
                return 1  # logged by serve(); health never went SERVING
            # This process is the daemon's own (a library caller of serve() keeps
            # its collector as it likes it).
            gc_policy.settle_for_serving()
        await stopping
        log.info("signal received")
    return 0


# `holodeskd config path` ------------------------------------------------------------


def config_main(argv: Sequence[str]) -> int:
    """Print the config file holodeskd would read and every effective value."""
    parser = argparse.ArgumentParser(
        prog="holodeskd config",
        description="Show the config file holodeskd reads (path, why that one) and every "
        "option's value from it or the defaults, as TOML; secrets are masked.",
    )
    parser.add_argument("action", choices=["path"])
    add_config_argument(
        parser,
        f"the file to show (default: ${config_file.ENV_VAR}, else {config_file.default_path()})",
    )
    args = parser.parse_args(list(argv))
    daemon = build_parser()
    try:
        source, settings = config_file.load_into(
            daemon, [] if args.config is None else ["--config", args.config]
        )
    except ConfigFileError as exc:
        print(f"holodeskd: {exc}", file=sys.stderr)
        return 2
    print(config_file.report(source, daemon, settings), end="")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["token"]:
        return token_main(arguments[1:])
    if arguments[:1] == ["config"]:
        return config_main(arguments[1:])
    parser = build_parser()
    try:
        config_file.load_into(parser, arguments)
    except ConfigFileError as exc:
        print(f"holodeskd: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(arguments)
    logs.configure(args.log_level, args.log_format, sys.stderr)
    try:
        config = config_from_args(args)
        return asyncio.run(run(config))
    except (PolicyConfigError, DialectConfigError, ValueError, OSError) as exc:
        print(f"holodeskd: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
