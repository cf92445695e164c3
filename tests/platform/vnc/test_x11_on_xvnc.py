"""The x11 backend on TigerVNC's Xvnc (a VNC desktop a client runs on directly).

mss's XCB capture refuses Xvnc's visual ("drawable's visual not found in screen's
supported visuals"); the x11 backend falls back to mss's Xlib capture, for good, so
a client on an Xvnc desktop sees it as on any X server.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from holodesk.client.doctor.findings import Status
from holodesk.client.doctor.machine import check_capture
from holodesk.platform.select import open_backend
from tests.platform.vnc.servers import VncServer
from tests.support.xvfb import xvfb as fresh_xvfb

pytestmark = [
    pytest.mark.vnc,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 is Linux-only here"),
]

ROOT_COLOUR = (0x2A, 0x6F, 0x97)


def test_the_x11_backend_captures_an_xvnc_desktop(xvnc_server: VncServer) -> None:
    subprocess.run(["xsetroot", "-display", xvnc_server.display, "-solid", "#2a6f97"], check=True)
    backend = open_backend("x11", display=xvnc_server.display)
    try:
        display = backend.screen.displays()[0]
        image = backend.screen.grab(display.bounds)
        again = backend.screen.grab_since(display.bounds)
    finally:
        backend.close()
    assert image.size == (display.bounds.width, display.bounds.height) == (1280, 800)
    assert image.getpixel((5, 5)) == ROOT_COLOUR
    assert again.image.size == image.size


def test_an_xvnc_capture_made_on_one_thread_is_used_and_closed_from_others(
    xvnc_server: VncServer,
) -> None:
    """mss's Xlib capture is bound to the thread that made it: a client captures in a
    worker thread and closes its backend from the main one (`holodesk demo` on an Xvnc
    desktop exited 1 after a run that succeeded: AttributeError from mss's close)."""
    subprocess.run(["xsetroot", "-display", xvnc_server.display, "-solid", "#2a6f97"], check=True)
    backend = open_backend("x11", display=xvnc_server.display)
    try:
        bounds = backend.screen.displays()[0].bounds
        with ThreadPoolExecutor(1) as first, ThreadPoolExecutor(1) as second:
            one = first.submit(backend.screen.grab, bounds).result()
            two = second.submit(backend.screen.grab, bounds).result()
    finally:
        backend.close()
    assert one.getpixel((5, 5)) == two.getpixel((5, 5)) == ROOT_COLOUR


def test_doctor_says_an_xvnc_desktop_is_captured_through_xlib_and_needs_no_fix(
    xvnc_server: VncServer,
) -> None:
    """The fallback works; doctor says which capture it is and why, so nobody hunts
    for a fault (issue 17: "doctor's fix text says so"). On Xvfb it says nothing."""
    # A black root reads as a refused capture.
    subprocess.run(["xsetroot", "-display", xvnc_server.display, "-solid", "#2a6f97"], check=True)
    backend = open_backend("x11", display=xvnc_server.display)
    try:
        finding = check_capture(backend)
    finally:
        backend.close()
    assert finding.status is Status.OK
    assert "Xlib" in finding.fix
    assert "visual" in finding.fix
    assert "nothing to fix" in finding.fix
    with fresh_xvfb() as xvfb:
        subprocess.run(["xsetroot", "-display", xvfb, "-solid", "#2a6f97"], check=True)
        plain = open_backend("x11", display=xvfb)
        try:
            assert check_capture(plain).fix == ""
        finally:
            plain.close()
