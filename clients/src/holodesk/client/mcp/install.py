"""`holodesk mcp install HOST`: add holodesk to an MCP host's configuration file.

Each host keeps its MCP servers under "mcpServers" in a JSON file, keyed by name,
each a stdio server {command, args, env}:

- Claude Desktop: claude_desktop_config.json in its app-data folder (macOS
  ~/Library/Application Support/Claude, Windows %APPDATA%\\Claude; on Linux,
  where only community builds exist, $XDG_CONFIG_HOME/Claude).
- Claude Code: user scope is "mcpServers" at the top of ~/.claude.json (what
  `claude mcp add --scope user` writes); project scope is .mcp.json in the
  project's root (shared through version control), with "type": "stdio".
- Cursor: ~/.cursor/mcp.json (global), or .cursor/mcp.json in a project.

Only our entry is added or replaced; every other key of the file is kept, and a
file that is not valid JSON is left alone with an error rather than rewritten.
The command is the absolute path of this holodesk (hosts start servers without
the user's shell PATH or virtual environment), and "env" holds the variables
through which the installing shell finds its desktop (DISPLAY, XAUTHORITY,
WAYLAND_DISPLAY, XDG_RUNTIME_DIR, ...: holodesk.platform.session_env), since a
host passes its servers only a few of its own (the MCP Python SDK: HOME, LOGNAME,
PATH, SHELL, TERM, USER) and a server without them cannot find the screen.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from holodesk.platform.app_folders import app_settings_folder
from holodesk.platform.session_env import DISPLAY_ENV, needs_display_env, session_environment

HOSTS = ("claude-desktop", "claude-code", "cursor")
SCOPES = ("user", "project")
DEFAULT_NAME = "holodesk"


class InstallError(Exception):
    """The configuration cannot be read or written; nothing was changed."""


@dataclass(frozen=True)
class Entry:
    """One stdio MCP server, as every host spells it."""

    command: str
    args: tuple[str, ...]
    env: Mapping[str, str]

    def as_json(self, host: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"command": self.command, "args": list(self.args)}
        if host == "claude-code":
            entry = {"type": "stdio", **entry}
        entry["env"] = dict(self.env)
        return entry


def holodesk_command() -> list[str]:
    """How a host starts this holodesk: the `holodesk` script beside this Python
    (a virtual environment's bin/ or Scripts\\), else this Python with -m."""
    folder = Path(sys.executable).parent
    for name in ("holodesk", "holodesk.exe"):
        script = folder / name
        if script.is_file():
            return [str(script.absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "holodesk.client"]


def server_entry(server_args: Sequence[str], env: Mapping[str, str] | None = None) -> Entry:
    command, *prefix = holodesk_command()
    return Entry(command, (*prefix, "mcp", *server_args), dict(env or {}))


def config_path(
    host: str,
    scope: str = "user",
    *,
    home: Path | None = None,
    project: Path | None = None,
    platform: str | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Path:
    """Where `host` keeps its MCP servers for `scope` (InstallError if it has none);
    `platform` ("darwin", "win32", "linux"; None: this machine's) picks the OS's folders."""
    home = home or Path.home()
    project = project or Path.cwd()
    if host == "claude-desktop":
        if scope != "user":
            raise InstallError("Claude Desktop has one configuration per user: use --scope user")
        folder = app_settings_folder(home, environ, platform) / "Claude"
        return folder / "claude_desktop_config.json"
    if host == "claude-code":
        return home / ".claude.json" if scope == "user" else project / ".mcp.json"
    if host == "cursor":
        folder = home if scope == "user" else project
        return folder / ".cursor" / "mcp.json"
    raise InstallError(f"unknown MCP host {host!r}: choose from {', '.join(HOSTS)}")


def merged(existing: Mapping[str, Any], name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """`existing` with `entry` as mcpServers[name], everything else as it was."""
    servers = existing.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise InstallError('its "mcpServers" is not a JSON object; fix it by hand first')
    return {**existing, "mcpServers": {**servers, name: entry}}


def read_config(path: Path) -> dict[str, Any]:
    """The file's JSON object ({} when it does not exist yet)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise InstallError(f"cannot read {path}: {error}") from error
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise InstallError(f"{path} is not valid JSON ({error}); fix it by hand first") from error
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; fix it by hand first")
    return data


def write_config(path: Path, data: Mapping[str, Any]) -> None:
    """Atomically: a host reading the file never sees half of it."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(temporary, mode)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as error:
        raise InstallError(f"cannot write {path}: {error}") from error


def install(host: str, path: Path, entry: Entry, name: str = DEFAULT_NAME) -> bool:
    """Add or replace our entry in the host's file; whether one was there before."""
    existing = read_config(path)
    servers = existing.get("mcpServers")
    replaced = isinstance(servers, dict) and name in servers
    write_config(path, merged(existing, name, entry.as_json(host)))
    return replaced


def desktop_env(environ: Mapping[str, str], assignments: Sequence[str] = ()) -> dict[str, str]:
    """The entry's "env": the desktop variables `environ` sets, then each KEY=VALUE
    of `assignments` over them (ValueError for one that is not KEY=VALUE)."""
    env = session_environment(environ)
    for assignment in assignments:
        key, equals, value = assignment.partition("=")
        if not equals or not key.strip() or key != key.strip():
            raise ValueError(f"--env {assignment!r}: write KEY=VALUE, e.g. --env DISPLAY=:0")
        env[key] = value
    return env


def env_summary(env: Mapping[str, str], platform: str | None = None) -> str:
    """What the entry tells the server about the desktop, in a line or two."""
    recorded = ", ".join(f"{key}={value}" for key, value in env.items())
    if any(env.get(name, "").strip() for name in DISPLAY_ENV) or not needs_display_env(platform):
        return f"the server gets {recorded}" if recorded else "the server gets no extra variable"
    return (
        "warning: no DISPLAY or WAYLAND_DISPLAY in this shell, so the server will start "
        "but its tools will say they cannot reach a desktop: run this again from a "
        "terminal of the desktop, or name it with --env DISPLAY=:0 (or "
        "--env WAYLAND_DISPLAY=wayland-0 --env XDG_RUNTIME_DIR=/run/user/UID)"
    )


def shown_config(host: str, entry: Entry, name: str = DEFAULT_NAME) -> str:
    """What --print shows: the entry as the host's file holds it."""
    return json.dumps({"mcpServers": {name: entry.as_json(host)}}, indent=2, ensure_ascii=False)


def claude_mcp_add(entry: Entry, scope: str, name: str = DEFAULT_NAME) -> str:
    """The same registration as Claude Code's own command line."""
    env = [f"--env={key}={value}" for key, value in entry.env.items()]
    words = ["claude", "mcp", "add", f"--scope={scope}", *env, name, "--", entry.command]
    return shlex.join([*words, *entry.args])
