"""`holodesk mcp install`: each host's file, in each host's format, merged not clobbered.

HOME and the working folder are the test's own, so no real configuration is ever
touched. The last test starts the server exactly as a host would, from the entry
written, and lists its tools with the MCP SDK's client (on the fake backend).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from holodesk.client.cli import main
from holodesk.client.mcp.install import (
    InstallError,
    claude_mcp_add,
    config_path,
    holodesk_command,
    server_entry,
)
from holodesk.platform.session_env import SESSION_ENV


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME (and XDG config folder) of the test's own; the cwd is a project in it.
    No desktop variable (test_mcp_environment.py tests those)."""
    for name in SESSION_ENV:
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "home"
    project = folder / "project"
    project.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder / ".config"))
    monkeypatch.chdir(project)
    return folder


def _read(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_each_host_keeps_its_servers_where_its_docs_say() -> None:
    home, project = Path("/h"), Path("/p")

    def where(host: str, scope: str = "user", platform: str = "linux", **env: str) -> Path:
        return config_path(host, scope, home=home, project=project, platform=platform, environ=env)

    desktop = "claude_desktop_config.json"
    assert where("claude-desktop", platform="darwin") == (
        home / "Library" / "Application Support" / "Claude" / desktop
    )
    assert where("claude-desktop", platform="win32", APPDATA="C:/AppData/Roaming") == (
        Path("C:/AppData/Roaming") / "Claude" / desktop
    )
    assert where("claude-desktop") == home / ".config" / "Claude" / desktop
    assert where("claude-desktop", XDG_CONFIG_HOME="/x") == Path("/x/Claude") / desktop
    assert where("claude-code") == home / ".claude.json"
    assert where("claude-code", "project") == project / ".mcp.json"
    assert where("cursor") == home / ".cursor" / "mcp.json"
    assert where("cursor", "project") == project / ".cursor" / "mcp.json"
    with pytest.raises(InstallError, match="one configuration per user"):
        where("claude-desktop", "project")


def test_install_adds_our_entry_and_keeps_everything_else(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".config" / "Claude" / "claude_desktop_config.json"
    path.parent.mkdir(parents=True)
    other = {"command": "npx", "args": ["-y", "some-server"]}
    path.write_text(json.dumps({"mcpServers": {"other": other}, "globalShortcut": "Ctrl+Space"}))

    args = ["mcp", "install", "claude-desktop", "--", "--server", "gpu:50051", "--max-rate", "5"]
    assert main(args) == 0
    assert str(path) in capsys.readouterr().out
    data = _read(path)
    assert data["globalShortcut"] == "Ctrl+Space"
    assert data["mcpServers"]["other"] == other
    ours = data["mcpServers"]["holodesk"]
    command, *prefix = holodesk_command()
    assert ours == {
        "command": command,
        "args": [*prefix, "mcp", "--server", "gpu:50051", "--max-rate", "5"],
        "env": {},
    }
    assert Path(ours["command"]).is_absolute()

    # Again, with other flags: replaced, not duplicated.
    assert main(["mcp", "install", "claude-desktop"]) == 0
    again = _read(path)["mcpServers"]
    assert sorted(again) == ["holodesk", "other"]
    assert again["holodesk"]["args"] == [*prefix, "mcp"]


def test_claude_code_and_cursor_formats_and_scopes(home: Path) -> None:
    assert main(["mcp", "install", "claude-code", "--scope", "project", "--name", "desk"]) == 0
    project = _read(Path.cwd() / ".mcp.json")["mcpServers"]["desk"]
    assert project["type"] == "stdio"
    assert project["command"] == holodesk_command()[0]

    user = home / ".claude.json"
    user.write_text(json.dumps({"numStartups": 3, "projects": {"/x": {"mcpServers": {}}}}))
    assert main(["mcp", "install", "claude-code"]) == 0
    data = _read(user)
    assert data["numStartups"] == 3
    assert data["projects"] == {"/x": {"mcpServers": {}}}
    assert data["mcpServers"]["holodesk"]["type"] == "stdio"

    assert main(["mcp", "install", "cursor"]) == 0
    cursor = _read(home / ".cursor" / "mcp.json")["mcpServers"]["holodesk"]
    assert "type" not in cursor
    assert cursor["args"][-1] == "mcp"
    assert main(["mcp", "install", "cursor", "--scope", "project"]) == 0
    assert (Path.cwd() / ".cursor" / "mcp.json").is_file()


def test_print_shows_the_configuration_and_writes_nothing(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--", "--server", "gpu:50051"]
    assert main(["mcp", "install", "claude-code", "--print", *flags]) == 0
    out = capsys.readouterr().out
    first, _, rest = out.partition("\n")
    assert first == f"# {home / '.claude.json'}"
    shown, _, command = rest.rpartition("}\n")
    assert json.loads(shown + "}")["mcpServers"]["holodesk"]["args"][-2:] == [
        "--server",
        "gpu:50051",
    ]
    entry = server_entry(["--server", "gpu:50051"])
    assert command.strip() == f"# or: {claude_mcp_add(entry, 'user')}"
    assert "claude mcp add --scope=user holodesk -- " in command
    assert sorted(p.name for p in home.iterdir()) == ["project"]


def test_a_broken_file_is_left_alone(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": {"a": 1},}')
    assert main(["mcp", "install", "cursor"]) == 1
    assert "is not valid JSON" in capsys.readouterr().err
    assert path.read_text() == '{"mcpServers": {"a": 1},}'
    assert main(["mcp", "install", "cursor", "--bogus"]) == 2
    assert "holodesk mcp would not start with '--bogus'" in capsys.readouterr().err


async def test_the_installed_entry_starts_a_working_server(home: Path, tmp_path: Path) -> None:
    assert main(["mcp", "install", "cursor", "--", "--backend", "fake"]) == 0
    entry = _read(home / ".cursor" / "mcp.json")["mcpServers"]["holodesk"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"])
    with (tmp_path / "mcp.err").open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            initialized = await session.initialize()
            assert initialized.server_info.name == "holodesk"
            names = {tool.name for tool in (await session.list_tools()).tools}
    assert {"screenshot", "click", "type_text", "key", "run_task"} <= names
