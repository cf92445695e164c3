"""The portal route's consent rules, status and PipeWire reader, without a compositor.

Consent and status run against the stand-in portal (RemoteDesktop version 2, so
it keeps restore tokens); the reader runs a real gst-launch-1.0 child against a
socket with no PipeWire behind it. The real desktops are test_portal_mutter*.py
and test_portal_kwin.py.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from holodesk.platform.errors import BackendUnavailableError, CaptureError
from holodesk.platform.select import open_backend
from holodesk.platform.wayland.dbus import PortalBus
from holodesk.platform.wayland.pipewire import PipeWireStream, gst_problems
from holodesk.platform.wayland.portal import ConsentNeededError, RemoteDesktopSession
from holodesk.platform.wayland.portal_route import portal_route_status
from holodesk.platform.wayland.tokens import REMOTE_DESKTOP, TokenStore
from holodesk.platform.wlroots.route import wayland_route
from tests.platform.wayland.conftest import StartPortal

pytestmark = pytest.mark.x11


def test_non_interactive_needs_a_stored_token(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    portal = start_portal()
    tokens = TokenStore(tmp_path / "tokens.json")
    with pytest.raises(ConsentNeededError, match="no restore token is stored yet") as caught:
        RemoteDesktopSession.start(PortalBus(bus), tokens, interactive=False)
    assert caught.value.persists
    assert "run holodesk once where a person can answer" in caught.value.fix
    assert portal.calls("RemoteDesktop.CreateSession") == []  # nothing was asked

    # Once a person has answered (the stand-in allows), later runs need nobody.
    open_backend(
        "wayland", input="portal", bus_address=bus, token_path=tokens.path, capture="screenshot"
    ).close()
    assert tokens.get(REMOTE_DESKTOP)
    session = RemoteDesktopSession.start(PortalBus(bus), tokens, interactive=False)
    session.close()
    assert [e["restored"] for e in portal.events("started")] == [False, True]


def test_status_says_what_a_person_must_approve(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    start_portal()
    tokens = TokenStore(tmp_path / "tokens.json")
    status = portal_route_status(bus, tokens)
    assert status.usable, status.problems
    assert status.persists
    assert "once" in status.approval
    tokens.put(REMOTE_DESKTOP, "a-token")
    assert portal_route_status(bus, tokens).approval == ""


def test_status_without_remote_desktop_says_so(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    start_portal(remote_desktop=False)
    status = portal_route_status(bus, TokenStore(tmp_path / "tokens.json"))
    assert not status.usable
    assert any("no RemoteDesktop" in cause for cause, _fix in status.problems)


def test_status_without_gstreamer_names_the_packages(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    start_portal()
    status = portal_route_status(
        bus, TokenStore(tmp_path / "tokens.json"), gst_launch="no-such-gst-launch"
    )
    assert not status.usable
    assert any("gstreamer1.0-pipewire" in fix for _cause, fix in status.problems)


def test_gstreamer_here_has_pipewiresrc() -> None:
    assert gst_problems() == []


def test_a_stream_without_pipewire_behind_it_is_a_capture_error() -> None:
    ours, theirs = socket.socketpair()
    try:
        with pytest.raises(CaptureError, match="PipeWire stream 42"):
            PipeWireStream(theirs.detach(), 42, first_frame_timeout_s=5)
    finally:
        ours.close()


def test_without_a_pipewire_reader_frames_come_from_screenshots(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    # capture="auto" (the default) reads the stream when gst can run, else falls
    # back to the Screenshot portal: here gst is "missing", so the stand-in's
    # Screenshot serves the frame and its RemoteDesktop the input.
    portal = start_portal()
    backend = open_backend(
        "wayland",
        input="portal",
        bus_address=bus,
        token_path=tmp_path / "tokens.json",
        gst_launch="no-such-gst-launch",
    )
    try:
        (display,) = backend.screen.displays()
        assert backend.screen.grab(display.bounds).size == (
            display.bounds.width,
            display.bounds.height,
        )
    finally:
        backend.close()
    assert portal.calls("Screenshot.Screenshot")
    assert not [e for e in portal.entries() if e.get("call") == "ScreenCast.OpenPipeWireRemote"]


def test_with_a_pipewire_reader_frames_come_from_the_stream(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    # gst runs here, so the default asks the session for its PipeWire remote; the
    # stand-in has none, and that is reported (no silent Screenshot fallback).
    portal = start_portal()
    with pytest.raises(BackendUnavailableError, match="did not open the screen-cast stream"):
        open_backend(
            "wayland", input="portal", bus_address=bus, token_path=tmp_path / "tokens.json"
        )
    asked = [e for e in portal.entries() if e.get("call") == "ScreenCast.OpenPipeWireRemote"]
    assert asked
    assert portal.calls("Screenshot.Screenshot") == []


def test_pipewire_capture_without_gstreamer_names_the_packages(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailableError, match="capture='pipewire'") as caught:
        open_backend(
            "wayland",
            bus_address="unix:path=/nonexistent/bus",
            token_path=tmp_path / "tokens.json",
            capture="pipewire",
            gst_launch="no-such-gst-launch",
        )
    assert any("gstreamer1.0-pipewire" in fix for _cause, fix in caught.value.causes)
    with pytest.raises(ValueError, match="capture must be one of"):
        open_backend("wayland", capture="fast", environ={})


def test_doctor_says_a_kept_token_means_no_dialog(
    bus: str, start_portal: StartPortal, tmp_path: Path
) -> None:
    """Proves: on a portal whose RemoteDesktop keeps tokens (version 2), the doctor's
    portal route asks for one dialog, naming the token's path, until a token is kept,
    then for nothing."""
    start_portal()
    path = tmp_path / "tokens.json"
    environ = {
        "WAYLAND_DISPLAY": str(tmp_path / "no-compositor"),
        "XDG_RUNTIME_DIR": str(tmp_path),
        "DBUS_SESSION_BUS_ADDRESS": bus,
    }
    route = wayland_route(environ, token_path=path)
    assert route is not None
    assert (route.name, route.usable, route.asks) == ("portal", True, True)
    assert "RemoteDesktop version 2" in route.why
    assert "once" in route.approval
    assert str(path) in route.approval
    TokenStore(path).put(REMOTE_DESKTOP, "token-1")
    kept = wayland_route(environ, token_path=path)
    assert kept is not None
    assert not kept.asks
    assert kept.approval.startswith("nothing now: a restore token")
