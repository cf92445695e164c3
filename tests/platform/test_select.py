"""open_backend: one place chooses the backend, and every refusal explains itself."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from holodesk.platform import preflight
from holodesk.platform.backends.fake import FakeBackend
from holodesk.platform.errors import BackendUnavailableError
from holodesk.platform.macos.backend import PYOBJC_MODULES
from holodesk.platform.select import (
    ENV_VAR,
    available_backends,
    default_backend_name,
    open_backend,
    resolve_backend_name,
)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No backend override, no display, no Wayland: each test sets what it needs."""
    for name in (ENV_VAR, "DISPLAY", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("platform", "expected"),
    [("linux", "x11"), ("darwin", "quartz"), ("win32", "win32"), ("freebsd14", "x11")],
)
def test_default_backend_follows_the_os(platform: str, expected: str) -> None:
    assert default_backend_name(platform) == expected


def test_explicit_name_beats_env_which_beats_os() -> None:
    env = {ENV_VAR: "fake"}
    assert resolve_backend_name("x11", env, "darwin") == "x11"
    assert resolve_backend_name(None, env, "darwin") == "fake"
    assert resolve_backend_name(None, {ENV_VAR: "  "}, "darwin") == "quartz"
    assert resolve_backend_name(None, {}, "linux") == "x11"


def test_unsupported_os_says_how_to_choose() -> None:
    with pytest.raises(BackendUnavailableError, match=r"sys\.platform='plan9'") as raised:
        resolve_backend_name(None, {}, "plan9")
    assert ENV_VAR in raised.value.causes[0][1]


def test_backends_are_discovered_by_module() -> None:
    assert {"fake", "x11", "quartz", "win32"} <= set(available_backends())


def test_env_override_opens_the_fake_backend(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv(ENV_VAR, "fake")
    backend = open_backend()
    assert isinstance(backend, FakeBackend)
    assert backend.name == "fake"


def test_options_reach_the_backend(clean_env: pytest.MonkeyPatch) -> None:
    backend = open_backend("fake", os="web")
    assert backend.os == "web"


def test_unknown_name_lists_the_backends(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(BackendUnavailableError) as raised:
        open_backend("vnc2")
    cause, fix = raised.value.causes[0]
    assert "no platform backend named 'vnc2'" in cause
    assert "fake" in fix
    assert "x11" in fix


def test_unknown_name_from_env_says_where_it_came_from(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv(ENV_VAR, "bogus")
    with pytest.raises(BackendUnavailableError, match=f"set by {ENV_VAR}"):
        open_backend()


def test_malformed_name_is_refused(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(BackendUnavailableError, match="not a backend name"):
        open_backend("../x11")


@pytest.mark.parametrize(
    ("name", "os_name", "platform"),
    [("quartz", "macOS", "darwin"), ("win32", "Windows", "win32")],
)
def test_other_os_backends_refuse_this_os(
    clean_env: pytest.MonkeyPatch, name: str, os_name: str, platform: str
) -> None:
    if sys.platform == platform:
        pytest.skip(f"this is {os_name}")
    with pytest.raises(BackendUnavailableError) as raised:
        open_backend(name)
    assert raised.value.backend == name
    assert f"the {name} backend drives {os_name} and this is {sys.platform}" in str(raised.value)


def test_macos_default_without_pyobjc_names_the_pip_command(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setattr(sys, "platform", "darwin")
    real = importlib.util.find_spec
    clean_env.setattr(
        importlib.util,
        "find_spec",
        lambda name, package=None: None if name in PYOBJC_MODULES else real(name, package),
    )
    with pytest.raises(BackendUnavailableError) as raised:
        open_backend()
    assert raised.value.backend == "quartz"
    [(cause, fix)] = raised.value.causes
    assert "pyobjc is not installed" in cause
    assert (
        "pip install pyobjc-framework-Quartz pyobjc-framework-ApplicationServices "
        "pyobjc-framework-Cocoa" in fix
    )


def test_no_display_explains_how_to_get_one(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(BackendUnavailableError) as raised:
        open_backend("x11")
    [(cause, fix)] = raised.value.causes
    assert "DISPLAY is not set" in cause
    for hint in ("Xvfb", "export DISPLAY", "graphical session"):
        assert hint in fix


@pytest.mark.parametrize(
    "wayland_env",
    [{"WAYLAND_DISPLAY": "wayland-0"}, {"XDG_SESSION_TYPE": "wayland"}],
    ids=["WAYLAND_DISPLAY", "XDG_SESSION_TYPE"],
)
def test_wayland_without_x_is_explained(
    clean_env: pytest.MonkeyPatch, wayland_env: dict[str, str]
) -> None:
    for name, value in wayland_env.items():
        clean_env.setenv(name, value)
    with pytest.raises(BackendUnavailableError) as raised:
        open_backend("x11")
    [(cause, fix)] = raised.value.causes
    assert "Wayland session" in cause
    assert next(iter(wayland_env.values())) in cause
    for hint in ("Xorg session", "XWayland", ENV_VAR):
        assert hint in fix


def test_every_problem_is_reported_at_once(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setattr(preflight, "installed", lambda module: module != "Xlib")
    with pytest.raises(BackendUnavailableError) as raised:
        open_backend("x11")
    causes = [cause for cause, _ in raised.value.causes]
    assert len(causes) == 2
    assert "python-xlib is not installed" in causes[0]
    assert "DISPLAY is not set" in causes[1]
    assert "pip install python-xlib" in raised.value.causes[0][1]


def test_unreachable_x_server_names_the_display(clean_env: pytest.MonkeyPatch) -> None:
    number = next(n for n in range(7300, 7400) if not Path(f"/tmp/.X11-unix/X{n}").exists())
    with pytest.raises(BackendUnavailableError) as raised:
        open_backend("x11", display=f":{number}")
    [(cause, fix)] = raised.value.causes
    assert f"DISPLAY=':{number}'" in cause
    assert "cannot connect" in cause
    assert "XAUTHORITY" in fix


@pytest.mark.x11
def test_x11_is_the_linux_default_with_a_display(xvfb: str, clean_env: pytest.MonkeyPatch) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("Linux only")
    clean_env.setenv("DISPLAY", xvfb)
    backend = open_backend()
    try:
        assert backend.name == "x11"
        assert backend.os == "linux"
        assert os.environ["DISPLAY"] == xvfb
    finally:
        backend.close()


@pytest.mark.x11
def test_xwayland_is_used_when_display_is_set(
    xvfb: str, clean_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clean_env.setenv("WAYLAND_DISPLAY", "wayland-0")
    clean_env.setenv("DISPLAY", xvfb)
    backend = open_backend("x11")
    backend.close()
    assert "XWayland" in caplog.text
