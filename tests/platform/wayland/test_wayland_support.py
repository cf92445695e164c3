"""Restore tokens, the session bus address, backend selection (pure logic, any OS)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from holodesk.platform.errors import CaptureError
from holodesk.platform.select import default_backend_name, resolve_backend_name
from holodesk.platform.wayland.dbus import BusUnavailableError, session_bus_address
from holodesk.platform.wayland.screenshot import path_from_uri
from holodesk.platform.wayland.tokens import (
    REMOTE_DESKTOP,
    SCREENCAST,
    TokenStore,
    default_token_path,
    state_dir,
)


def test_state_dir_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert state_dir() == tmp_path / ".local" / "state" / "holodesk"
    monkeypatch.setenv("XDG_STATE_HOME", "/srv/state")
    assert state_dir() == Path("/srv/state/holodesk")
    assert default_token_path().parent == Path("/srv/state/holodesk")


def test_tokens_round_trip_privately(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "state" / "tokens.json"
    store = TokenStore(path)
    assert store.get(REMOTE_DESKTOP) is None
    store.put(REMOTE_DESKTOP, "abc")
    store.put(SCREENCAST, "def")
    assert TokenStore(path).get(REMOTE_DESKTOP) == "abc"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    store.put(REMOTE_DESKTOP, None)
    assert json.loads(path.read_text()) == {SCREENCAST: "def"}
    assert [p.name for p in path.parent.iterdir()] == ["tokens.json"]  # no temporary left


def test_a_corrupt_token_file_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text("{not json")
    store = TokenStore(path)
    assert store.get(REMOTE_DESKTOP) is None
    store.put(REMOTE_DESKTOP, "fresh")
    assert store.get(REMOTE_DESKTOP) == "fresh"


def test_session_bus_address(tmp_path: Path) -> None:
    assert session_bus_address({"DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"}) == "unix:path=/x"
    (tmp_path / "bus").touch()
    assert session_bus_address({"XDG_RUNTIME_DIR": str(tmp_path)}) == f"unix:path={tmp_path}/bus"
    with pytest.raises(BusUnavailableError, match="XDG_RUNTIME_DIR"):
        session_bus_address({})


def test_file_uris_are_decoded() -> None:
    assert path_from_uri("file:///home/a/Pictures/Screenshot%20from%20x.png") == Path(
        "/home/a/Pictures/Screenshot from x.png"
    )
    with pytest.raises(CaptureError, match="not a local file"):
        path_from_uri("https://example.com/a.png")


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"WAYLAND_DISPLAY": "wayland-0"}, "wayland"),
        ({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, "x11"),  # XWayland
        ({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": " "}, "wayland"),
        ({"DISPLAY": ":0"}, "x11"),
        ({}, "x11"),
    ],
)
def test_linux_default_follows_the_session(environ: dict[str, str], expected: str) -> None:
    assert default_backend_name("linux", environ) == expected
    assert resolve_backend_name(None, environ, "linux") == expected


def test_the_override_still_wins() -> None:
    env = {"WAYLAND_DISPLAY": "wayland-0", "HOLODESK_PLATFORM_BACKEND": "x11"}
    assert resolve_backend_name(None, env, "linux") == "x11"
    override = {"HOLODESK_PLATFORM_BACKEND": "wayland"}
    assert resolve_backend_name(None, override, "linux") == "wayland"
    assert default_backend_name("darwin", {"WAYLAND_DISPLAY": "w"}) == "quartz"
