"""`holodesk doctor` on Wayland sessions: which route it takes, why, and what to approve.

On a real headless sway (wlroots: every protocol found, nothing to approve, the
whole machine check passing through that backend), and on a bare Wayland server
(libwayland-server through pywayland, advertising wl_shm only: a real compositor
socket with none of the wlroots protocols), where the route falls to the portal
(no session bus here) and then uinput, XWayland's DISPLAY set or not (x11 would
reach X11 apps only: it is named as the alternative).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.client.cli import main
from holodesk.client.doctor.findings import Status
from holodesk.client.doctor.machine import MachineOptions, check_machine
from holodesk.client.doctor.route import ROUTE, check_route
from holodesk.platform.base import Region
from holodesk.platform.select import ENV_VAR
from holodesk.platform.wayland.uinput import uinput_problems
from holodesk.platform.wlroots.connection import REQUIRED
from holodesk.platform.wlroots.route import NOTHING, wayland_route
from tests.platform.wayland.bare_compositor import bare_compositor as serve_bare_compositor
from tests.platform.wlroots.gtk_probe import GtkUnavailableError
from tests.platform.wlroots.gtk_target import start_app
from tests.platform.wlroots.sway import Sway, SwayUnavailableError

SESSION_VARS = ("DISPLAY", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE", "DBUS_SESSION_BUS_ADDRESS",
                ENV_VAR, "HOLODESK_WAYLAND_INPUT")  # fmt: skip


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """This process's environment with no session of any kind (each test sets its own)."""
    for name in SESSION_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # no D-Bus socket in it
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # no restore tokens
    return monkeypatch


@pytest.fixture(scope="module")
def sway() -> Iterator[Sway]:
    try:
        running = Sway.start(outputs=("output HEADLESS-1 resolution 800x600 position 0,0",))
    except SwayUnavailableError as error:
        pytest.fail(f"headless sway cannot start here: {error}")
    yield running
    running.stop()


@pytest.fixture
def bare_compositor(session: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """A Wayland server offering wl_shm and nothing else; its socket's path."""
    with serve_bare_compositor(tmp_path) as socket:
        yield socket


@pytest.mark.wlroots
def test_on_sway_the_route_is_wlroots_with_nothing_to_approve(
    sway: Sway, session: pytest.MonkeyPatch
) -> None:
    """Proves: the route is wlroots, every protocol the route needs is named as found,
    and nothing needs approving; with XWayland's DISPLAY set too."""
    session.setenv("WAYLAND_DISPLAY", sway.wayland_socket)
    session.setenv("DISPLAY", sway.x_display)
    finding = check_route(None, os.environ)
    assert finding is not None
    assert finding.status is Status.OK
    offers = f"the compositor at {sway.wayland_socket} offers every protocol it needs: "
    assert finding.detail.startswith(f"wlroots (the wlroots backend): {offers}")
    for name, what in REQUIRED.items():
        assert f"{name} ({what})" in finding.detail
    assert finding.detail.endswith(f"; to approve: {NOTHING}")


@pytest.mark.wlroots
def test_on_sway_every_machine_check_passes_through_the_route(
    sway: Sway, session: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Proves: the whole machine check on sway: the route first, then the wlroots
    backend's display, a capture that is not black (a GTK window on it), the
    pointer moved 1 px and back, no OS grant needed."""
    session.setenv("WAYLAND_DISPLAY", sway.wayland_socket)
    try:
        app = start_app(sway, tmp_path / "gtk.log", Region(0, 0, 600, 400))
    except GtkUnavailableError as error:
        pytest.fail(f"the native Wayland app cannot run here: {error}")
    try:
        findings = check_machine(MachineOptions(check_input=True, hotkey=None))
    finally:
        app.stop()
    checks = {f.check: f for f in findings}
    assert [f.check for f in findings] == [ROUTE, "display", "capture", "input", "permissions",
                                          "e-stop hotkey"]  # fmt: skip
    assert [f.status for f in findings[:-1]] == [Status.OK] * 5, findings
    assert checks["display"].detail == (
        "wlroots backend (linux), 1: HEADLESS-1 800x600 at (0,0) primary"
    )
    assert checks["capture"].detail.startswith("HEADLESS-1: 800x600 in ")
    assert checks["input"].detail.endswith("and back")


def test_a_bare_compositor_falls_to_uinput_and_says_what_is_missing(
    bare_compositor: str, session: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Proves: with none of the wlroots protocols and no session bus (so no portal),
    the route is uinput, each missing protocol and the portal's absence are named,
    and where /dev/uinput is unusable the fix is the route's own (module, udev rule)."""
    session.setenv("WAYLAND_DISPLAY", bare_compositor)
    route = wayland_route(uinput_devnode=str(tmp_path / "uinput"))
    assert route is not None
    assert (route.name, route.backend, route.usable) == ("uinput", "wayland", False)
    assert "wl_shm" not in route.why  # offered
    for name in REQUIRED.keys() - {"wl_shm"}:
        assert f"{name} for {REQUIRED[name]}" in route.why
    assert "the portal cannot be asked: there is no D-Bus session bus" in route.why
    assert f"{tmp_path / 'uinput'} does not exist" in route.why
    assert "modprobe uinput" in route.approval
    assert "HOLODESK_WAYLAND_INPUT=portal" in route.approval


def test_doctor_json_on_a_bare_compositor_fails_with_the_route_and_its_fix(
    bare_compositor: str, session: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Proves: `holodesk doctor --json` reports the route first; it fails with the
    fix where this machine's /dev/uinput is unusable (here: absent), and is ok where
    it is writable."""
    session.setenv("WAYLAND_DISPLAY", bare_compositor)
    main(["doctor", "--json", "--server", "", "--no-estop"])
    findings = json.loads(capsys.readouterr().out)
    route = findings[0]
    assert route["check"] == ROUTE
    assert route["detail"].startswith("uinput (the wayland backend): the compositor at ")
    problems = uinput_problems()
    if problems:
        assert route["status"] == "fail"
        assert route["fix"] == "; ".join(fix for _, fix in problems)
    else:
        assert route["status"] == "ok"


def test_with_xwayland_the_route_stays_wayland_and_names_the_alternative(
    bare_compositor: str, session: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Proves: DISPLAY set beside a live compositor without the protocols does not
    make the route x11 (it would reach X11 apps only): the wayland backend's route
    (here uinput, no portal), with XWayland said to be unused and how to choose it."""
    session.setenv("WAYLAND_DISPLAY", bare_compositor)
    session.setenv("DISPLAY", ":77")
    route = wayland_route(uinput_devnode=str(tmp_path / "uinput"))
    assert route is not None
    assert (route.name, route.backend) == ("uinput", "wayland")
    assert "XWayland at DISPLAY=:77 is not used: x11 input reaches X11 apps only" in route.why
    assert f"{ENV_VAR}=x11 chooses it" in route.why


def test_a_stale_wayland_display_beside_an_x_server_is_x11(
    session: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Proves: WAYLAND_DISPLAY naming no socket is no Wayland session to drive: x11,
    and the route says why."""
    session.setenv("WAYLAND_DISPLAY", str(tmp_path / "wayland-9"))
    session.setenv("DISPLAY", ":77")
    route = wayland_route()
    assert route is not None
    assert (route.name, route.backend, route.usable) == ("x11", "x11", True)
    assert f"names no compositor (no Wayland socket at {tmp_path / 'wayland-9'})" in route.why
    assert "DISPLAY=:77 is the X server" in route.why


def test_a_pinned_portal_route_without_a_portal_is_a_failure(
    bare_compositor: str, session: pytest.MonkeyPatch
) -> None:
    """Proves: HOLODESK_WAYLAND_INPUT=portal where no portal can be asked: no route
    works, and the finding says both why and what to change."""
    session.setenv("WAYLAND_DISPLAY", bare_compositor)
    session.setenv("HOLODESK_WAYLAND_INPUT", "portal")
    finding = check_route(None, os.environ)
    assert finding is not None
    assert finding.status is Status.FAIL
    assert finding.detail.startswith("no route works: ")
    assert "HOLODESK_WAYLAND_INPUT=portal, but the portal cannot be asked" in finding.detail
    assert "unset HOLODESK_WAYLAND_INPUT" in finding.fix


def test_an_explicit_backend_is_said_to_override_the_choice(
    bare_compositor: str, session: pytest.MonkeyPatch
) -> None:
    """Proves: with --backend given, the finding says the automatic choice is not used."""
    session.setenv("WAYLAND_DISPLAY", bare_compositor)
    session.setenv("DISPLAY", ":77")
    finding = check_route("fake", os.environ)
    assert finding is not None
    assert finding.detail.startswith("--backend chose the fake backend; without it: uinput ")


def test_a_wayland_session_type_without_a_socket_says_so(session: pytest.MonkeyPatch) -> None:
    """Proves: XDG_SESSION_TYPE=wayland with neither WAYLAND_DISPLAY nor DISPLAY: no
    route, and the fix says where to run holodesk."""
    session.setenv("XDG_SESSION_TYPE", "wayland")
    route = wayland_route()
    assert route is not None
    assert (route.name, route.usable) == ("none", False)
    assert "WAYLAND_DISPLAY is not set" in route.why
    assert "WAYLAND_DISPLAY" in route.approval


def test_off_wayland_there_is_no_route_finding(session: pytest.MonkeyPatch) -> None:
    """Proves: an X11 or headless session gets no route finding at all."""
    session.setenv("DISPLAY", ":77")
    assert check_route(None, os.environ) is None


# The portal branch's approval text (token kept or not) is tested against the stand-in
# portal in tests/platform/wayland/test_wayland_portal_route.py and on real GNOME in
# tests/platform/wayland/test_portal_mutter_consent.py.
