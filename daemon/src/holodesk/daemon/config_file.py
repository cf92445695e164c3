"""holodeskd's config file: where it is, and reading it into the flag parser.

One file per CLI, `daemon.toml` in platformdirs' user config dir (on Linux
$XDG_CONFIG_HOME/holodesk/daemon.toml): the daemon usually runs on another machine,
or as another user (a service), than the client, so each CLI's file holds only keys
that CLI checks. `--config PATH` or $HOLODESKD_CONFIG names another file. The
mechanism (keys, precedence, errors) is shared with `holodesk`: holodesk.data.cli_config.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from platformdirs import user_config_path

from holodesk.data.cli_config import (
    ConfigSource,
    Setting,
    apply_config,
    describe,
    find_config,
    read_config,
)

ENV_VAR = "HOLODESKD_CONFIG"
FILE_NAME = "daemon.toml"


def default_path() -> Path:
    """The file holodeskd reads when neither --config nor $HOLODESKD_CONFIG names one."""
    return user_config_path("holodesk") / FILE_NAME


def config_source(argv: Sequence[str]) -> ConfigSource:
    """The file these arguments make holodeskd read (it has no subcommand to stop at)."""
    return find_config(argv, env_var=ENV_VAR, default_path=default_path(), stop_at_positional=False)


def load_into(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> tuple[ConfigSource, list[Setting]]:
    """Read the file these arguments name into the parser's defaults
    (ConfigFileError when it cannot be used)."""
    source = config_source(argv)
    return source, apply_config(parser, read_config(source))


def report(
    source: ConfigSource, parser: argparse.ArgumentParser, settings: Sequence[Setting]
) -> str:
    """`holodeskd config path`: which file, why, whether it exists, and every
    option's effective value before flags."""
    origin = "the default" if source.origin == "default" else f"from {source.origin}"
    state = "" if source.path.exists() else "; it does not exist"
    head = (
        f"# holodeskd reads {source.path} ({origin}{state})\n"
        "# keys are the long options without their dashes; flags beat this file\n"
    )
    return head + describe(parser, settings)
