"""Opening the wayland backend through a stand-in portal: consent, tokens, errors, geometry.

The stand-in (tests/support/portal_standin.py) plays a compositor's portal on a
private session bus and Xvfb; each test starts its own with the behaviour it needs.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import mss
import pytest
from PIL import Image, ImageChops

from holodesk.platform.base import Backend, MouseButton, Region
from holodesk.platform.errors import BackendUnavailableError, InputError
from holodesk.platform.select import open_backend
from holodesk.platform.wayland.uinput import POINTER_NAME
from tests.platform.wayland.conftest import StartPortal
from tests.platform.wayland.fake_uinput import FakeDevices
from tests.support.probe import ProbeApp

pytestmark = pytest.mark.x11


def _open(bus: str, tokens: Path, **options: object) -> Backend:
    # Screenshot frames: the stand-in portal has no PipeWire stream.
    return open_backend(
        "wayland", bus_address=bus, token_path=tokens, **{"capture": "screenshot", **options}
    )


def _xvfb_image(display: str, region: Region) -> Image.Image:
    with mss.MSS(display=display) as grabber:
        shot = grabber.grab(
            {"left": region.x, "top": region.y, "width": region.width, "height": region.height}
        )
    return Image.frombytes("RGB", shot.size, shot.bgra, "raw", "BGRX")


def _same(a: Image.Image, b: Image.Image) -> bool:
    return a.size == b.size and ImageChops.difference(a, b).getbbox() is None


# -- consent and restore tokens -----------------------------------------------------------
def test_consent_is_asked_once_then_the_restore_token_is_reused(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    portal = start_portal()
    tokens = tmp_path / "state" / "tokens.json"
    _open(bus, tokens, input="portal").close()
    first = json.loads(tokens.read_text())["remote_desktop"]
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600  # a token grants control of the desktop
    _open(bus, tokens, input="portal").close()
    second = json.loads(tokens.read_text())["remote_desktop"]

    assert len(portal.events("consent")) == 1
    assert [e["restored"] for e in portal.events("started")] == [False, True]
    selects = portal.calls("RemoteDesktop.SelectDevices")
    assert [s["args"][1].get("restore_token") for s in selects] == [None, first]
    assert all(s["args"][1]["persist_mode"] == 2 for s in selects)
    assert all(s["args"][1]["types"] == 3 for s in selects)  # keyboard | pointer
    assert second != first  # single-use: the portal handed out the next one


def test_a_stale_token_asks_again_and_is_replaced(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    portal = start_portal()
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"remote_desktop": "revoked-token"}))
    _open(bus, tokens, input="portal").close()
    assert len(portal.events("consent")) == 1
    assert json.loads(tokens.read_text())["remote_desktop"] not in ("", "revoked-token")


def test_consent_denied_is_a_clear_error(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    portal = start_portal(consent="deny")
    tokens = tmp_path / "tokens.json"
    with pytest.raises(BackendUnavailableError) as raised:
        _open(bus, tokens, input="portal")
    [(cause, fix)] = raised.value.causes
    assert raised.value.backend == "wayland"
    assert "did not allow remote control" in cause
    assert "Allow Remote Interaction" in fix
    assert portal.events("consent") == [
        {"event": "consent", "kind": "remote_desktop", "granted": False}
    ]
    assert not tokens.exists()


def test_auto_does_not_fall_back_to_uinput_when_consent_is_denied(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    start_portal(consent="deny")
    with pytest.raises(BackendUnavailableError) as raised:
        _open(bus, tmp_path / "tokens.json", input="auto")
    assert [c for c, _ in raised.value.causes if "uinput" in c] == []


# -- a portal that is missing, or offers less ---------------------------------------------------
def test_no_portal_on_the_bus_names_what_to_install(bus: str, tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailableError) as raised:
        _open(bus, tmp_path / "tokens.json")
    [(cause, fix)] = raised.value.causes
    assert "xdg-desktop-portal is not running" in cause
    for package in ("xdg-desktop-portal-gnome", "xdg-desktop-portal-kde", "xdg-desktop-portal-wlr"):
        assert package in fix


def test_no_session_bus_says_where_to_run(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailableError) as raised:
        open_backend("wayland", environ={"XDG_RUNTIME_DIR": str(tmp_path)})
    [(cause, fix)] = raised.value.causes
    assert "no D-Bus session bus" in cause
    assert "DBUS_SESSION_BUS_ADDRESS" in fix
    assert "graphical session" in fix


def test_portal_without_remote_desktop_names_the_alternatives(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    start_portal(remote_desktop=False)
    with pytest.raises(BackendUnavailableError) as raised:
        _open(bus, tmp_path / "tokens.json", input="portal")
    [(cause, fix)] = raised.value.causes
    assert "no RemoteDesktop" in cause
    for alternative in ("xdg-desktop-portal-wlr", "HOLODESK_WAYLAND_INPUT=uinput", "wayvnc"):
        assert alternative in fix


def test_nothing_works_lists_both_routes(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    """A wlroots-like portal (no RemoteDesktop) and no usable /dev/uinput: both routes explained."""
    start_portal(remote_desktop=False)
    with pytest.raises(BackendUnavailableError) as raised:
        _open(bus, tmp_path / "tokens.json", input="auto", uinput_devnode=str(tmp_path / "uinput"))
    (portal_cause, _portal_fix), (uinput_cause, uinput_fix) = raised.value.causes
    assert "no RemoteDesktop" in portal_cause
    assert "uinput route:" in uinput_cause
    assert "does not exist" in uinput_cause
    assert "modprobe uinput" in uinput_fix


def test_screenshot_refused_is_a_clear_error(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    start_portal(screenshot="deny")
    with pytest.raises(BackendUnavailableError) as raised:
        _open(bus, tmp_path / "tokens.json", input="portal")
    [(cause, _fix)] = raised.value.causes
    assert "refused the screenshot" in cause


def test_bad_route_is_refused_before_anything_is_asked(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailableError, match="HOLODESK_WAYLAND_INPUT='pipewire'"):
        open_backend("wayland", environ={"HOLODESK_WAYLAND_INPUT": "pipewire"})
    with pytest.raises(ValueError, match="scroll must be one of"):
        open_backend("wayland", scroll="fast", environ={})


# -- the session ending under us ----------------------------------------------------------------
def test_session_closed_by_the_desktop_is_a_clear_input_error(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    portal = start_portal()
    backend = _open(bus, tmp_path / "tokens.json", input="portal")
    try:
        backend.input.move(10, 10)
        portal.close_sessions()
        with pytest.raises(InputError, match="closed by the desktop"):
            backend.input.move(20, 20)
        with pytest.raises(InputError, match="closed by the desktop"):
            backend.input.click(20, 20)
    finally:
        backend.close()


# -- capture --------------------------------------------------------------------------------
def test_capture_is_the_screen_and_leaves_no_files(
    bus: str, start_portal: StartPortal, tmp_path: Path, xvfb: str, probe: ProbeApp
) -> None:
    portal = start_portal()
    backend = _open(bus, tmp_path / "tokens.json", input="portal")
    try:
        [display] = backend.screen.displays()
        assert display.bounds == Region(0, 0, 1280, 800)
        swatch = probe.widgets["swatch"]
        region = Region(swatch.x, swatch.y, swatch.width, swatch.height)
        image = backend.screen.grab(region)
        assert image.size == (swatch.width, swatch.height)
        assert image.getpixel((swatch.width // 2, swatch.height // 2)) == (0xFF, 0x80, 0x00)
        whole = backend.screen.grab(display.bounds)
        assert _same(whole, _xvfb_image(xvfb, display.bounds))
        with pytest.raises(ValueError, match="outside the desktop"):
            backend.screen.grab(Region(1200, 0, 100, 10))
    finally:
        backend.close()
    assert list(portal.screenshot_dir.iterdir()) == []  # each screenshot read, then deleted


def test_multiple_hidpi_monitors_place_clicks_and_frames_exactly(
    bus: str, start_portal: StartPortal, tmp_path: Path, xvfb: str
) -> None:
    """Two monitors at scale 2: the portal speaks logical pixels, holodesk physical ones."""
    portal = start_portal(monitors=[(0, 0, 640, 800), (640, 0, 640, 800)], scale=2)
    probe = ProbeApp.start(xvfb, tmp_path / "probe.log", x=600, y=30)
    backend = _open(bus, tmp_path / "tokens.json", input="portal")
    try:
        left, right = backend.screen.displays()
        assert (left.bounds, right.bounds) == (Region(0, 0, 640, 800), Region(640, 0, 640, 800))
        assert left.primary
        assert not right.primary
        assert left.scale_factor == right.scale_factor == 2.0
        canvas = probe.widgets["canvas"]
        # Odd coordinates are half logical pixels: they must land exactly anyway.
        points = [(canvas.x + 9, canvas.y + 41), (canvas.x + 101, canvas.y + 77)]
        assert points[0][0] < 640 <= points[1][0]
        for x, y in points:
            backend.input.click(x, y, button=MouseButton.RIGHT)
        probe.wait_for(lambda _: len(probe.events("release")) == 2)
        assert [(p["x_root"], p["y_root"]) for p in probe.events("press")] == points
        motions = portal.calls("RemoteDesktop.NotifyPointerMotionAbsolute")
        # Each pixel aimed at its centre, in its stream's logical space.
        assert [m["args"][2:] for m in motions[-2:]] == [
            [40, (points[0][0] + 0.5) / 2, (points[0][1] + 0.5) / 2],
            [41, (points[1][0] - 640 + 0.5) / 2, (points[1][1] + 0.5) / 2],
        ]
        assert _same(backend.screen.grab(right.bounds), _xvfb_image(xvfb, right.bounds))
    finally:
        backend.close()
        probe.stop()


def test_explicit_scale_skips_the_measurement(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    portal = start_portal(monitors=[(0, 0, 640, 400)], scale=2)
    backend = _open(bus, tmp_path / "tokens.json", input="portal", scale_factor=2)
    try:
        [display] = backend.screen.displays()
        assert display.bounds == Region(0, 0, 640, 400)
        assert portal.calls("Screenshot.Screenshot") == []  # nothing measured
    finally:
        backend.close()


# -- the uinput route, chosen automatically -------------------------------------------------
def test_auto_uses_uinput_where_the_portal_has_no_remote_desktop(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    """Like sway: ScreenCast gives the monitors, uinput (a fake device here) the input."""
    portal = start_portal(remote_desktop=False, monitors=[(0, 0, 640, 800), (640, 0, 640, 800)])
    devices = FakeDevices()
    tokens = tmp_path / "tokens.json"
    backend = _open(bus, tokens, input="auto", uinput_factory=devices, device_settle_s=0)
    try:
        assert [d.bounds for d in backend.screen.displays()] == [
            Region(0, 0, 640, 800),
            Region(640, 0, 640, 800),
        ]
        backend.input.click(700, 10)
        pointer = devices.named(POINTER_NAME)
        assert pointer.reports()[0] == [(3, 0, 700), (3, 1, 10)]  # EV_ABS X, Y
        axes = dict(pointer.capabilities_requested[3])
        assert axes[0].max == 1279  # the whole desktop, both monitors
    finally:
        backend.close()
    # The ScreenCast session was only for geometry: started with a token, then closed.
    assert portal.calls("ScreenCast.SelectSources")[0]["args"][1]["persist_mode"] == 2
    assert json.loads(tokens.read_text())["screencast"]
    assert portal.calls("Session.Close")
    assert all(device.closed for device in devices.made)


def test_uinput_without_screencast_is_one_display_the_screenshot_size(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    start_portal(remote_desktop=False, screencast=False)
    devices = FakeDevices()
    backend = _open(
        bus, tmp_path / "tokens.json", input="uinput", uinput_factory=devices, device_settle_s=0
    )
    try:
        [display] = backend.screen.displays()
        assert display.bounds == Region(0, 0, 1280, 800)
    finally:
        backend.close()
