"""The backend a Linux session gets (holodesk.platform.wayland.choice), and the one error
that lists every route when the chosen one cannot open.

The rule is tested over environments with the compositor's answer given (a
`Globals` value, what the probe returns), then on a real Wayland server that
offers none of the wlroots protocols (tests/platform/wayland/bare_compositor.py)
with an X server's DISPLAY set beside it: the wayland backend is chosen, and
its failure here (no portal) comes with the wlroots route's cause first and the
XWayland alternative last. Real sway and real mutter are in
tests/platform/wlroots/test_wlroots_choice.py and test_portal_mutter_consent.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.platform.backend_env import BACKEND_ENV
from holodesk.platform.errors import BackendUnavailableError
from holodesk.platform.select import ENV_VAR, default_backend_name, open_backend, session_choice
from holodesk.platform.wayland.choice import SessionChoice, choose, decide
from holodesk.platform.wlroots.connection import REQUIRED
from holodesk.platform.wlroots.probe import Globals
from tests.platform.wayland.bare_compositor import bare_compositor
from tests.support.dbus_session import dbus_daemon, private_session_bus

WLROOTS = Globals(frozenset(REQUIRED) | {"wl_compositor"})
GNOME_LIKE = Globals(frozenset({"wl_compositor", "wl_shm", "wl_seat", "zxdg_output_manager_v1"}))
STALE = Globals(error="no Wayland socket at /run/user/1000/wayland-0", absent=True)
UNSET = Globals(error="WAYLAND_DISPLAY is not set", absent=True)
HUNG = Globals(error="the compositor at /run/user/1000/wayland-0 did not answer in 2 s")
SESSION_VARS = ("DISPLAY", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE", "DBUS_SESSION_BUS_ADDRESS",
                ENV_VAR, "HOLODESK_WAYLAND_INPUT")  # fmt: skip


@pytest.mark.parametrize(
    ("environ", "found", "backend"),
    [
        ({}, UNSET, "x11"),
        ({"DISPLAY": ":0"}, UNSET, "x11"),
        ({"XDG_SESSION_TYPE": "wayland"}, UNSET, "x11"),  # the x11 preflight explains
        ({"XDG_SESSION_TYPE": "wayland", "DISPLAY": ":0"}, UNSET, "x11"),
        ({"WAYLAND_DISPLAY": "wayland-0"}, WLROOTS, "wlroots"),
        ({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, WLROOTS, "wlroots"),
        ({"WAYLAND_DISPLAY": "wayland-0"}, GNOME_LIKE, "wayland"),
        ({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, GNOME_LIKE, "wayland"),
        ({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": " "}, GNOME_LIKE, "wayland"),
        ({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, HUNG, "wayland"),
        ({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, STALE, "x11"),
        ({"WAYLAND_DISPLAY": "wayland-0"}, STALE, "wayland"),  # the portal needs no socket
    ],
    ids=lambda value: ",".join(value) if isinstance(value, dict) else None,
)
def test_the_rule_over_environments(environ: dict[str, str], found: Globals, backend: str) -> None:
    assert decide(environ, found).backend == backend


def test_a_gnome_session_with_xwayland_says_what_it_passed_over_and_the_alternative() -> None:
    """Proves: the wlroots route is named as passed over with each missing protocol,
    and XWayland as an alternative that reaches X11 apps only, chosen by name."""
    choice = decide({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":1"}, GNOME_LIKE)
    [(cause, fix)] = choice.passed_over
    assert cause.startswith("wlroots route: the compositor at wayland-0 lacks ")
    for name in ("zwlr_screencopy_manager_v1", "zwlr_virtual_pointer_manager_v1"):
        assert f"{name} for {REQUIRED[name]}" in cause
    assert "wl_shm" not in cause
    assert "GNOME or KDE use the wayland backend" in fix
    [(what, how)] = choice.alternatives
    assert "XWayland (DISPLAY=:1)" in what
    assert "X11 apps only" in what
    assert how == f"to drive X11 apps only, set {ENV_VAR}=x11"


def test_wlroots_names_every_protocol_and_keeps_xwayland_as_the_alternative() -> None:
    choice = decide({"WAYLAND_DISPLAY": "wayland-1", "DISPLAY": ":0"}, WLROOTS)
    assert choice.why.startswith("the compositor at wayland-1 offers every protocol it needs: ")
    for name, what in REQUIRED.items():
        assert f"{name} ({what})" in choice.why
    assert choice.passed_over == ()
    assert len(choice.alternatives) == 1


def test_without_wayland_nothing_is_added_to_an_error() -> None:
    """Proves: an X11 session's choice adds no causes: x11's own errors read as before."""
    choice = decide({"DISPLAY": ":0"}, UNSET)
    assert choice == SessionChoice("x11", choice.why)
    assert choice.explain([("a", "b")]) == [("a", "b")]


def test_explain_puts_every_route_in_order() -> None:
    passed, alternative = ("p", "pf"), ("a", "af")
    choice = SessionChoice("wayland", "why", passed_over=(passed,), alternatives=(alternative,))
    assert choice.explain([("c", "cf")]) == [passed, ("c", "cf"), alternative]


def test_the_choice_and_select_name_the_same_variable() -> None:
    assert BACKEND_ENV == ENV_VAR


def test_other_oses_are_not_a_session_choice() -> None:
    assert session_choice("darwin", {"WAYLAND_DISPLAY": "w"}) is None
    assert default_backend_name("darwin", {"WAYLAND_DISPLAY": "w"}) == "quartz"
    assert default_backend_name("win32", {"WAYLAND_DISPLAY": "w"}) == "win32"


# -- on a real Wayland server without the wlroots protocols ------------------------------


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """This process's environment with no session of any kind (each test sets its own)."""
    for name in SESSION_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # no D-Bus socket in it
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # no restore tokens
    return monkeypatch


@pytest.fixture
def compositor(session: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    with bare_compositor(tmp_path) as socket:
        yield socket


def test_a_live_compositor_without_the_protocols_gets_wayland_despite_display(
    compositor: str, session: pytest.MonkeyPatch
) -> None:
    """Proves: the probe really asks the compositor; XWayland's DISPLAY does not win."""
    environ = {"WAYLAND_DISPLAY": compositor, "DISPLAY": ":77"}
    choice = choose(environ)
    assert choice.backend == "wayland"
    assert f"the compositor at {compositor} lacks " in choice.why
    assert default_backend_name("linux", environ) == "wayland"


def test_the_auto_error_lists_every_route_with_its_fix(
    compositor: str, session: pytest.MonkeyPatch
) -> None:
    """Proves: on that compositor with no portal on the session bus, open_backend()
    fails once, listing the wlroots route's cause, then exactly what the wayland
    backend itself says (open_backend('wayland')), then XWayland's alternative."""
    if dbus_daemon() is None:
        pytest.fail("dbus-daemon is not installed: apt-get install dbus")
    session.setenv("WAYLAND_DISPLAY", compositor)
    session.setenv("DISPLAY", ":77")
    with private_session_bus() as address:
        session.setenv("DBUS_SESSION_BUS_ADDRESS", address)
        with pytest.raises(BackendUnavailableError) as explicit:
            open_backend("wayland")
        with pytest.raises(BackendUnavailableError) as auto:
            open_backend()
    assert auto.value.backend == "wayland"
    causes = auto.value.causes
    assert causes[0][0].startswith(f"wlroots route: the compositor at {compositor} lacks ")
    assert causes[1:-1] == explicit.value.causes
    assert "x11 through XWayland (DISPLAY=:77)" in causes[-1][0]
    assert causes[-1][1] == f"to drive X11 apps only, set {ENV_VAR}=x11"
    assert isinstance(auto.value.__cause__, BackendUnavailableError)
    text = str(auto.value)
    assert text.count("fix: ") == len(causes)


def test_a_named_backend_keeps_its_own_error(compositor: str, session: pytest.MonkeyPatch) -> None:
    """Proves: asked for by name ($HOLODESK_PLATFORM_BACKEND), no route is added."""
    session.setenv("WAYLAND_DISPLAY", compositor)
    session.setenv("DISPLAY", ":77")
    session.setenv(ENV_VAR, "wayland")
    with pytest.raises(BackendUnavailableError) as raised:
        open_backend()
    assert not any(cause.startswith("wlroots route") for cause, _ in raised.value.causes)
