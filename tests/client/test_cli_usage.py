"""`holodesk`'s usage errors name what was wrong, and exit 2 (ExitCode.USAGE) as
docs/running.md says.

argparse checks that a required subcommand is there before it reports flags it
does not know, so `holodesk --bogus` used to answer only that COMMAND is
required, and the person never learnt that --bogus was the mistake.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from holodesk.client.cli import main
from holodesk.client.exit_codes import ExitCode


@pytest.mark.parametrize(
    "argv",
    [["--bogus"], ["--bogus", "--other"], ["-x"]],
)
def test_an_unknown_flag_without_a_command_is_named(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert f"unrecognized arguments: {' '.join(argv)}" in err, err
    assert "usage: holodesk" in err


def test_an_unknown_flag_before_a_command_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--bogus", "config", "path"]) == ExitCode.USAGE
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_no_command_at_all_still_says_a_command_is_needed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "the following arguments are required: COMMAND" in err, err


def test_the_installed_command_exits_2_naming_the_flag() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "holodesk.client", "--bogus"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == ExitCode.USAGE
    assert "unrecognized arguments: --bogus" in done.stderr, done.stderr
