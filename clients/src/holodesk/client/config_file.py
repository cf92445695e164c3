"""holodesk's config file: where it is, and reading it into the command parsers.

One file per CLI, `client.toml` in platformdirs' user config dir (on Linux
$XDG_CONFIG_HOME/holodesk/client.toml): the client runs on a person's desktop, the
daemon often elsewhere or as a service, so each file holds only keys its own CLI
checks. `holodesk --config PATH` or $HOLODESK_CONFIG names another file. Top-level
keys are holodesk's own options, tables its subcommands ([run], [locate],
[model.check]); the mechanism is shared with holodeskd: holodesk.data.cli_config.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from platformdirs import user_config_path

from holodesk.client.connection_args import SERVER_ENV
from holodesk.client.credentials import TOKEN_FILE_ENV
from holodesk.data.cli_config import (
    ConfigSource,
    Setting,
    apply_config,
    describe,
    find_config,
    read_config,
)

ENV_VAR = "HOLODESK_CONFIG"
FILE_NAME = "client.toml"
# The `config` command itself is no table.
SKIP = frozenset({"config"})
# Variables that beat the file's value (they already beat the built-in default).
ENV_OVERRIDES = {"server": SERVER_ENV, "token-file": TOKEN_FILE_ENV}


def default_path() -> Path:
    """The file holodesk reads when neither --config nor $HOLODESK_CONFIG names one."""
    return user_config_path("holodesk") / FILE_NAME


def load_into(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> tuple[ConfigSource, list[Setting]]:
    """Read the file these arguments name (`--config` before the subcommand) into
    the parsers' defaults; ConfigFileError when it cannot be used."""
    source = find_config(argv, env_var=ENV_VAR, default_path=default_path())
    settings = apply_config(parser, read_config(source), skip=SKIP, env_overrides=ENV_OVERRIDES)
    return source, settings


def report(
    source: ConfigSource, parser: argparse.ArgumentParser, settings: Sequence[Setting]
) -> str:
    """`holodesk config path`: which file, why, whether it exists, and every
    option's effective value before flags, by subcommand table."""
    origin = "the default" if source.origin == "default" else f"from {source.origin}"
    state = "" if source.path.exists() else "; it does not exist"
    head = (
        f"# holodesk reads {source.path} ({origin}{state})\n"
        "# keys are the long options without their dashes, a table per subcommand;\n"
        f"# flags beat ${SERVER_ENV} and ${TOKEN_FILE_ENV}, which beat this file\n"
    )
    return head + describe(parser, settings, skip=SKIP)
