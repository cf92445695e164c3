"""Connecting to real servers: passwords, wrong addresses, a server dying mid-session."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.platform.base import Region
from holodesk.platform.errors import BackendUnavailableError, CaptureError, InputError
from holodesk.platform.select import open_backend
from holodesk.platform.vnc.backend import PASSWORD_ENV, SERVER_ENV
from tests.platform.vnc.servers import VncServer, free_port, start_xvnc, xvnc
from tests.support.probe import ProbeApp

pytestmark = pytest.mark.vnc

PASSWORD = "s3cret!"


@pytest.fixture(scope="module")
def locked() -> Iterator[VncServer]:
    """An Xvnc that asks for a VNC password."""
    with xvnc(640, 480, password=PASSWORD) as server:
        yield server


def test_the_right_password_opens_it(locked: VncServer) -> None:
    backend = open_backend("vnc", **locked.options())
    try:
        assert backend.screen.grab(Region(0, 0, 640, 480)).size == (640, 480)
    finally:
        backend.close()


def test_the_password_may_come_from_the_environment(
    locked: VncServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SERVER_ENV, f"127.0.0.1::{locked.port}")
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    backend = open_backend("vnc")
    try:
        assert backend.screen.displays()[0].bounds == Region(0, 0, 640, 480)
    finally:
        backend.close()


def test_a_wrong_password_is_a_clear_error(locked: VncServer) -> None:
    with pytest.raises(BackendUnavailableError) as error:
        open_backend("vnc", host="127.0.0.1", port=locked.port, password="wrong")
    message = str(error.value)
    assert f"127.0.0.1:{locked.port} rejected the VNC password" in message
    assert "Authentication failure" in message  # the server's own reason
    assert "HOLODESK_VNC_PASSWORD" in message


def test_a_missing_password_is_a_clear_error(
    locked: VncServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    with pytest.raises(BackendUnavailableError, match="requires a VNC password"):
        open_backend("vnc", host="127.0.0.1", port=locked.port)


def test_nothing_listening_is_a_clear_error() -> None:
    port = free_port()
    with pytest.raises(
        BackendUnavailableError, match=f"cannot connect to a VNC server at 127.0.0.1:{port}"
    ):
        open_backend("vnc", port=port)


def test_a_server_that_is_not_vnc_is_a_clear_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:

        def answer() -> None:
            client, _ = listener.accept()
            with client:
                client.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        port = listener.getsockname()[1]
        with pytest.raises(BackendUnavailableError, match="not an RFB \\(VNC\\) server"):
            open_backend("vnc", port=port)
        thread.join()


def test_a_bad_address_in_the_environment_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(SERVER_ENV, "host:display")
    with pytest.raises(BackendUnavailableError, match="HOST::PORT"):
        open_backend("vnc")


def test_a_server_killed_mid_session_then_restarted(tmp_path: Path) -> None:
    server = start_xvnc(tmp_path, 640, 480)
    backend = open_backend("vnc", **server.options())
    try:
        backend.screen.grab(Region(0, 0, 64, 64))
        server.kill()
        # The call that finds the connection gone says so...
        with pytest.raises(InputError, match="was lost") as lost:
            backend.input.move(10, 10)
        assert f"127.0.0.1:{server.port}" in str(lost.value)
        # ...the next tries to reconnect, and says why it cannot...
        with pytest.raises(CaptureError, match="cannot reconnect"):
            backend.screen.grab(Region(0, 0, 64, 64))
        # ...and once the server is back, work goes on, on the new server.
        server.stop()
        server = start_xvnc(tmp_path, 640, 480, port=server.port)
        probe = ProbeApp.start(server.display, tmp_path / "probe.log", x=10, y=10)
        try:
            backend.input.click(*probe.widgets["ok"].center)
            probe.wait_for_event("command", widget="ok")
        finally:
            probe.stop()
    finally:
        backend.close()
        server.stop()


def test_a_server_killed_during_a_capture_wait(tmp_path: Path) -> None:
    server = start_xvnc(tmp_path, 320, 240)
    backend = open_backend("vnc", **server.options())
    try:
        backend.screen.grab(Region(0, 0, 32, 32))
        server.kill()
        with pytest.raises(CaptureError, match="was lost"):
            backend.screen.grab(Region(0, 0, 32, 32))
    finally:
        backend.close()
        server.stop()
