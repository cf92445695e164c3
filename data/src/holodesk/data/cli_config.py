"""One TOML config file per command line, read into argparse's defaults.

Both CLIs (`holodesk` and `holodeskd`) use this module, and neither may import the
other, so it lives in holodesk-data, the one distribution both depend on; it needs
only the standard library (argparse, tomllib).

The rules, the same for both CLIs:
- a key is a long option as typed, without its leading dashes (`max-sessions`,
  `no-frame-deltas`); a table is a subcommand (`[run]`, `[model.check]`);
- a flag beats an environment variable the CLI names for that key, which beats the
  file, which beats the built-in default. The file works by becoming argparse's
  defaults before parsing, so argparse itself lets any flag given win;
- an unknown key or table, or a value of the wrong type, is a ConfigFileError
  naming the file, the line (where it can be found), the key and what was expected:
  the CLI exits 2 before starting anything.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

CONFIG_OPTION = "--config"
# Key words whose values `describe` never shows.
SECRET_WORDS = frozenset({"token", "password", "secret"})
MASK = "***"


class ConfigFileError(ValueError):
    """A config file that cannot be used; the message says where and why."""


@dataclass(frozen=True)
class ConfigSource:
    """Which file a CLI reads and why that one."""

    path: Path
    # "--config", "$NAME" or "default".
    origin: str

    @property
    def explicit(self) -> bool:
        """A file the user named must exist; the default one may be absent."""
        return self.origin != "default"


@dataclass(frozen=True)
class Setting:
    """One value the file set (after checking and converting it)."""

    table: tuple[str, ...]
    key: str
    value: object
    # Name of the environment variable that overrides it now, "" when none is set.
    overridden_by: str = ""


def find_config(
    argv: Sequence[str],
    *,
    env_var: str,
    default_path: Path,
    stop_at_positional: bool = True,
    environ: Mapping[str, str] | None = None,
) -> ConfigSource:
    """The file named by `--config PATH` in argv, else by $env_var, else the default.

    With `stop_at_positional`, only the arguments before the first positional one
    (the subcommand) are looked at, where the top-level parser would accept it."""
    for index, argument in enumerate(argv):
        if argument == "--":
            break
        if argument == CONFIG_OPTION:
            if index + 1 >= len(argv):
                raise ConfigFileError(f"{CONFIG_OPTION} needs a PATH")
            return ConfigSource(Path(argv[index + 1]), CONFIG_OPTION)
        if argument.startswith(CONFIG_OPTION + "="):
            return ConfigSource(Path(argument.partition("=")[2]), CONFIG_OPTION)
        previous = argv[index - 1] if index else ""
        if stop_at_positional and not argument.startswith("-") and previous != CONFIG_OPTION:
            break
    env = os.environ if environ is None else environ
    if env.get(env_var):
        return ConfigSource(Path(env[env_var]), f"${env_var}")
    return ConfigSource(default_path, "default")


def add_config_argument(parser: argparse.ArgumentParser, source_help: str) -> None:
    """`--config PATH` in the top-level parser, so --help shows it and parsing accepts
    it (find_config has already read it)."""
    parser.add_argument(CONFIG_OPTION, metavar="PATH", help=source_help)


@dataclass(frozen=True)
class ConfigText:
    """A parsed file and its text (for line numbers in errors)."""

    source: ConfigSource
    data: dict[str, object]
    text: str


def read_config(source: ConfigSource) -> ConfigText:
    """The file's TOML; an absent default file is an empty config."""
    try:
        text = source.path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if source.explicit:
            raise ConfigFileError(
                f"config file {source.path} (from {source.origin}) does not exist"
            ) from None
        return ConfigText(source, {}, "")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"cannot read config file {source.path}: {exc}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{source.path}: not valid TOML: {exc}") from exc
    return ConfigText(source, data, text)


def apply_config(
    parser: argparse.ArgumentParser,
    config: ConfigText,
    *,
    skip: frozenset[str] = frozenset(),
    env_overrides: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Setting]:
    """Check every key of the file against the parser tree and make each value the
    default of its option. `skip` names options and subcommands that are no keys
    (e.g. `config`); `env_overrides` maps a key to the variable that beats the file."""
    env = os.environ if environ is None else environ
    overrides = env_overrides or {}
    settings: list[Setting] = []
    _apply_table(parser, config.data, (), config, skip, overrides, env, settings)
    return settings


def _apply_table(
    parser: argparse.ArgumentParser,
    table: Mapping[str, object],
    path: tuple[str, ...],
    config: ConfigText,
    skip: frozenset[str],
    overrides: Mapping[str, str],
    env: Mapping[str, str],
    settings: list[Setting],
) -> None:
    options = configurable_options(parser, skip)
    commands = subcommands(parser, skip)
    for key, value in table.items():
        if key in commands and isinstance(value, dict):
            _apply_table(commands[key], value, (*path, key), config, skip, overrides, env, settings)
            continue
        action = options.get(key)
        if action is None:
            raise ConfigFileError(_unknown(key, value, path, options, commands, config))
        converted = _convert(action, key, value, path, config)
        variable = overrides.get(key, "")
        if variable and env.get(variable):
            settings.append(Setting(path, key, converted, overridden_by=f"${variable}"))
            continue
        _set_default(parser, action, converted)
        settings.append(Setting(path, key, converted))


def configurable_options(
    parser: argparse.ArgumentParser, skip: frozenset[str] = frozenset()
) -> dict[str, argparse.Action]:
    """The parser's options a file may set, by their key (long option, no dashes)."""
    found: dict[str, argparse.Action] = {}
    for action in parser._actions:
        if isinstance(
            action,
            argparse._HelpAction
            | argparse._VersionAction
            | argparse._SubParsersAction
            | argparse._AppendConstAction,
        ):
            continue
        longs = [o for o in action.option_strings if o.startswith("--")]
        if not longs:
            continue  # positional, or short only
        key = longs[0][2:]
        if key in skip or longs[0] == CONFIG_OPTION:
            continue
        found[key] = action
    return found


def subcommands(
    parser: argparse.ArgumentParser, skip: frozenset[str] = frozenset()
) -> dict[str, argparse.ArgumentParser]:
    """The parser's subcommands by name (aliases included), each a table."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if name not in skip:
                    found[name] = sub
    return found


def _flag_like(action: argparse.Action) -> bool:
    return action.nargs == 0 and not isinstance(action, argparse._CountAction)


def _set_default(parser: argparse.ArgumentParser, action: argparse.Action, value: object) -> None:
    if _flag_like(action) and not isinstance(action, argparse.BooleanOptionalAction):
        if not value:
            return  # `flag = false`: as if the flag were not given
        value = action.const
    parser.set_defaults(**{action.dest: value})
    action.required = False


def _convert(
    action: argparse.Action,
    key: str,
    value: object,
    path: tuple[str, ...],
    config: ConfigText,
) -> object:
    where = _where(config, path, key)
    if _flag_like(action):
        if not isinstance(value, bool):
            raise ConfigFileError(f"{where}: expected true or false, got {_describe(value)}")
        return value
    if isinstance(action, argparse._CountAction):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigFileError(f"{where}: expected a count (0, 1 ...), got {_describe(value)}")
        return value
    many = (
        isinstance(action, argparse._AppendAction)
        or action.nargs in ("*", "+", argparse.REMAINDER)
        or (isinstance(action.nargs, int) and action.nargs > 1)
    )
    if many:
        if not isinstance(value, list):
            raise ConfigFileError(
                f"{where}: expected a list of {_expected(action)}, got {_describe(value)}"
            )
        return [_scalar(action, item, where) for item in value]
    return _scalar(action, value, where)


def _scalar(action: argparse.Action, value: object, where: str) -> object:
    kind = action.type
    wrong = ConfigFileError(f"{where}: expected {_expected(action)}, got {_describe(value)}")
    if isinstance(value, bool | dict | list):
        raise wrong
    converted: object
    if kind is None:
        if not isinstance(value, str):
            raise wrong
        converted = value
    elif kind is int:
        if not isinstance(value, int):
            raise wrong
        converted = value
    elif kind is float:
        if not isinstance(value, int | float):
            raise wrong
        converted = float(value)
    elif callable(kind):
        if not isinstance(value, str | int | float):
            raise wrong
        try:
            converted = kind(str(value))
        except (ValueError, TypeError, argparse.ArgumentTypeError) as exc:
            raise ConfigFileError(f"{where}: {value!r}: {exc}") from exc
    else:
        raise wrong
    if action.choices is not None and converted not in action.choices:
        choices = ", ".join(repr(c) for c in action.choices)
        raise ConfigFileError(f"{where}: {converted!r} is not one of {choices}")
    return converted


def _expected(action: argparse.Action) -> str:
    kind = action.type
    if kind is int:
        return "an integer"
    if kind is float:
        return "a number"
    if kind is None:
        return "a string"
    return "a string or a number"  # what a type function reads, as typed on a command line


def _describe(value: object) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string"}
    names |= {list: "an array", dict: "a table"}
    name = names.get(type(value), type(value).__name__)
    shown = json.dumps(value, default=str) if not isinstance(value, dict) else "{...}"
    return f"{name} ({shown[:60]})"


def _unknown(
    key: str,
    value: object,
    path: tuple[str, ...],
    options: Mapping[str, argparse.Action],
    commands: Mapping[str, argparse.ArgumentParser],
    config: ConfigText,
) -> str:
    where = _where(config, path, key)
    if isinstance(value, dict):
        if key in options:
            return f"{where}: expected {_expected(options[key])}, got a table"
        names = ", ".join(f"[{'.'.join((*path, c))}]" for c in commands) or "none"
        return f"{where}: unknown table [{'.'.join((*path, key))}] (the tables here: {names})"
    hints = [key.replace("_", "-")] if key.replace("_", "-") in options else []
    hints = hints or difflib.get_close_matches(key, list(options), n=1)
    hint = f"; did you mean {hints[0]!r}?" if hints else ""
    table = f"[{'.'.join(path)}]" if path else "the top level"
    return (
        f"{where}: unknown key {key!r} in {table}{hint} (keys are the long options, "
        "as typed, without the dashes)"
    )


def _where(config: ConfigText, path: tuple[str, ...], key: str) -> str:
    line = key_line(config.text, path, key)
    place = f"line {line}: " if line else ""
    name = ".".join((*path, key))
    return f"{config.source.path}: {place}{name}"


_HEADER = re.compile(r"^\s*\[\s*([^\]\[]+?)\s*\]\s*(#.*)?$")


def key_line(text: str, path: tuple[str, ...], key: str) -> int | None:
    """The 1-based line where `key` is set in table `path` (best effort: plain
    `[a.b]` headers and `key =` or `"key" =` lines), None when not found."""
    current: tuple[str, ...] = ()
    target = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            current = tuple(part.strip().strip("\"'") for part in header.group(1).split("."))
            if current == (*path, key):
                return number  # a table where a value was expected
            continue
        if current == path and target.match(line):
            return number
    return None


def describe(
    parser: argparse.ArgumentParser,
    settings: Sequence[Setting],
    *,
    skip: frozenset[str] = frozenset(),
) -> str:
    """Every option's effective value (before flags), as TOML a person could start a
    file from; each line says where its value comes from. Secrets are masked."""
    from_file = {(s.table, s.key): s for s in settings}
    lines: list[str] = []
    _describe_table(parser, (), from_file, skip, lines)
    return "\n".join(lines) + "\n"


def _describe_table(
    parser: argparse.ArgumentParser,
    path: tuple[str, ...],
    from_file: Mapping[tuple[tuple[str, ...], str], Setting],
    skip: frozenset[str],
    lines: list[str],
) -> None:
    options = configurable_options(parser, skip)
    if options:
        if path:
            lines.append(f"\n[{'.'.join(path)}]")
        for key, action in options.items():
            setting = from_file.get((path, key))
            if setting is not None and not setting.overridden_by:
                value, origin = setting.value, "from the file"
            else:
                value = parser.get_default(action.dest)
                if _flag_like(action) and not isinstance(action, argparse.BooleanOptionalAction):
                    value = value == action.const
                origin = "default"
                if setting is not None:
                    origin = f"from {setting.overridden_by} (it beats the file's value)"
            lines.append(_toml_line(key, value, origin))
    seen: set[int] = set()
    for name, sub in subcommands(parser, skip).items():
        if id(sub) in seen:
            continue  # an alias
        seen.add(id(sub))
        _describe_table(sub, (*path, name), from_file, skip, lines)


def _toml_line(key: str, value: object, origin: str) -> str:
    if value is None:
        return f"# {key}: not set ({origin})"
    if set(key.split("-")) & SECRET_WORDS:
        return f'{key} = "{MASK}"  # {origin}, masked'
    return f"{key} = {toml_value(value)}  # {origin}"


def toml_value(value: object) -> str:
    """A TOML literal for an option's value (paths and other objects as strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)
