"""The config-file rules both CLIs share (holodesk.data.cli_config), on small real
argparse parsers: each kind of option, precedence, errors, finding the file, and
`config path`'s listing (valid TOML, secrets masked)."""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

import pytest

from holodesk.data.cli_config import (
    MASK,
    ConfigFileError,
    ConfigSource,
    ConfigText,
    apply_config,
    describe,
    find_config,
    key_line,
    read_config,
)


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("--config")
    parser.add_argument("--name", default="anon")
    parser.add_argument("--level", choices=["low", "high"], default="low")
    parser.add_argument("--ratio", type=float, default=1.0)
    parser.add_argument("-v", "--verbose", action="count", default=0)
    parser.add_argument("--no-color", dest="color", action="store_false")
    parser.add_argument("--api-token", default="")
    parser.add_argument("--opt", action="append", default=[])
    parser.add_argument("--cache", type=Path)
    commands = parser.add_subparsers(dest="command", required=True)
    go = commands.add_parser("go", aliases=["g"])
    go.add_argument("--speed", type=_positive, default=1)
    go.add_argument("--target", required=True)
    go.add_argument("--tags", nargs="+", default=[])
    go.add_argument("--fast", action="store_true")
    go.add_argument("what")
    return parser


def _config(tmp_path: Path, text: str) -> ConfigText:
    path = tmp_path / "tool.toml"
    path.write_text(text)
    return read_config(ConfigSource(path, "--config"))


def _parse(tmp_path: Path, text: str, *argv: str) -> argparse.Namespace:
    parser = _parser()
    apply_config(parser, _config(tmp_path, text))
    return parser.parse_args(list(argv))


def test_every_kind_of_option_takes_its_value_from_the_file(tmp_path: Path) -> None:
    text = (
        'name = "ada"\nlevel = "high"\nratio = 2\nverbose = 2\nno-color = true\n'
        'opt = ["a=1"]\ncache = "/tmp/c"\n'
        '[go]\nspeed = 3\ntarget = "t"\ntags = ["x", "y"]\nfast = true\n'
    )
    args = _parse(tmp_path, text, "go", "it")
    assert (args.name, args.level, args.ratio, args.verbose) == ("ada", "high", 2.0, 2)
    assert args.color is False
    assert args.opt == ["a=1"]
    assert args.cache == Path("/tmp/c")
    assert (args.speed, args.target, args.tags, args.fast) == (3, "t", ["x", "y"], True)


def test_flags_beat_the_file_and_false_means_not_given(tmp_path: Path) -> None:
    text = 'name = "ada"\nno-color = false\n[go]\nspeed = 3\ntarget = "t"\nfast = false\n'
    args = _parse(tmp_path, text, "--name", "bo", "go", "--speed", "5", "--fast", "it")
    assert (args.name, args.speed, args.fast, args.target) == ("bo", 5, True, "t")
    assert args.color is True  # `no-color = false`: as if --no-color were absent
    # A repeatable option: the file's entries first, then the flags' (later wins).
    args = _parse(tmp_path, 'opt = ["a=1"]\n[go]\ntarget = "t"\n', "--opt", "a=2", "go", "it")
    assert args.opt == ["a=1", "a=2"]


def test_a_subcommand_alias_reads_the_same_table(tmp_path: Path) -> None:
    args = _parse(tmp_path, '[go]\ntarget = "t"\n', "g", "it")
    assert args.target == "t"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ratio = true\n", "line 1: ratio: expected a number, got a boolean (true)"),
        ('verbose = "2"\n', "line 1: verbose: expected a count"),
        ('level = "mid"\n', "line 1: level: 'mid' is not one of 'low', 'high'"),
        ('opt = "a=1"\n', "line 1: opt: expected a list of a string"),
        ("[go]\nspeed = -1\n", "line 2: go.speed: -1: must be positive, got -1"),
        ('[go]\n"tag" = 1\n', "line 2: go.tag: unknown key 'tag' in [go]; did you mean 'tags'?"),
        (
            "[go.deeper]\nx = 1\n",
            "line 1: go.deeper: unknown table [go.deeper] (the tables here: none)",
        ),
        ("[name]\nx = 1\n", "line 1: name: expected a string, got a table"),
        ('what = "x"\n', "unknown key 'what'"),  # positionals are no keys
        ('config = "x"\n', "unknown key 'config'"),
    ],
)
def test_bad_values_name_the_file_line_key_and_expected_type(
    tmp_path: Path, text: str, expected: str
) -> None:
    with pytest.raises(ConfigFileError) as raised:
        _parse(tmp_path, text, "go", "--target", "t", "it")
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'tool.toml'}: "), message
    assert expected in message


def test_finding_the_file(tmp_path: Path) -> None:
    default = tmp_path / "default.toml"
    env = {"TOOL_CONFIG": str(tmp_path / "env.toml")}
    found = find_config(
        ["go", "--config", "x"], env_var="TOOL_CONFIG", default_path=default, environ={}
    )
    assert found == ConfigSource(default, "default")  # after the subcommand: not ours
    found = find_config(
        ["--config", "a.toml", "go"], env_var="TOOL_CONFIG", default_path=default, environ=env
    )
    assert found == ConfigSource(Path("a.toml"), "--config")
    found = find_config(
        ["--config=b.toml"], env_var="TOOL_CONFIG", default_path=default, environ=env
    )
    assert found == ConfigSource(Path("b.toml"), "--config")
    found = find_config(["go"], env_var="TOOL_CONFIG", default_path=default, environ=env)
    assert found == ConfigSource(tmp_path / "env.toml", "$TOOL_CONFIG")
    found = find_config(
        ["--x", "1", "--config", "c.toml"],
        env_var="TOOL_CONFIG",
        default_path=default,
        environ={},
        stop_at_positional=False,
    )
    assert found.path == Path("c.toml")
    with pytest.raises(ConfigFileError, match="--config needs a PATH"):
        find_config(["--config"], env_var="TOOL_CONFIG", default_path=default, environ={})
    # An absent default file is no config; an absent named one is an error.
    assert read_config(ConfigSource(default, "default")).data == {}
    with pytest.raises(ConfigFileError, match=r"\(from \$TOOL_CONFIG\) does not exist"):
        read_config(ConfigSource(tmp_path / "env.toml", "$TOOL_CONFIG"))


def test_an_environment_override_beats_the_file(tmp_path: Path) -> None:
    parser = _parser()
    parser.set_defaults(name="from-env")  # as a CLI whose default reads $TOOL_NAME
    settings = apply_config(
        parser,
        _config(tmp_path, 'name = "from-file"\n'),
        env_overrides={"name": "TOOL_NAME"},
        environ={"TOOL_NAME": "from-env"},
    )
    assert parser.parse_args(["go", "--target", "t", "it"]).name == "from-env"
    assert settings[0].overridden_by == "$TOOL_NAME"
    assert 'name = "from-env"  # from $TOOL_NAME (it beats the file' in describe(parser, settings)


def test_the_listing_is_toml_of_the_effective_values_with_secrets_masked(tmp_path: Path) -> None:
    parser = _parser()
    text = 'name = "ada"\napi-token = "hunter2"\nratio = 0.5\nopt = ["k=v"]\n[go]\nspeed = 4\n'
    settings = apply_config(parser, _config(tmp_path, text))
    listing = describe(parser, settings)
    assert "hunter2" not in listing
    assert f'api-token = "{MASK}"  # from the file, masked' in listing
    assert "# cache: not set (default)" in listing
    assert listing.count("[go]") == 1  # the alias is listed once
    values = tomllib.loads(listing)
    assert values["name"] == "ada"
    assert values["ratio"] == 0.5
    assert values["opt"] == ["k=v"]
    assert values["level"] == "low"
    assert values["no-color"] is False
    assert values["go"]["speed"] == 4
    assert values["go"]["tags"] == []


def test_key_line_finds_quoted_keys_and_nested_tables() -> None:
    text = '# top\nname = 1\n\n[go]\n"speed" = 2\n[go.sub]  # c\nx = 3\n'
    assert key_line(text, (), "name") == 2
    assert key_line(text, ("go",), "speed") == 5
    assert key_line(text, ("go", "sub"), "x") == 7
    assert key_line(text, ("go",), "sub") == 6
    assert key_line(text, (), "missing") is None
