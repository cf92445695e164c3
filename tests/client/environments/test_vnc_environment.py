"""VncEnvironment on a real TigerVNC Xvnc with a password: the caller's reset command
runs before every rollout with the server's address, and its failure or hang is an
error that says so; the connection waits for a server still coming up, and fails
at once on a password the server refuses."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.client.rollouts.environments import VncEnvironment
from holodesk.client.rollouts.environments.vnc import VncEnvironmentError
from holodesk.client.rollouts.trajectory import RolloutTask
from holodesk.platform.errors import BackendUnavailableError
from holodesk.platform.vnc.errors import AuthenticationError
from tests.platform.vnc.servers import VncServer, free_port, xvnc

pytestmark = [pytest.mark.vnc, pytest.mark.timeout(120)]

TASK = RolloutTask("anything")
PASSWORD = "s3cret"


@pytest.fixture(scope="module")
def server() -> Iterator[VncServer]:
    with xvnc(640, 480, password=PASSWORD) as running:
        yield running


def test_the_reset_command_runs_before_every_rollout_with_the_address(
    server: VncServer, tmp_path: Path
) -> None:
    log = tmp_path / "resets"
    address = f"127.0.0.1::{server.port}"
    environment = VncEnvironment(
        address,
        password=PASSWORD,
        reset_command=["sh", "-c", f'echo "$HOLODESK_VNC_SERVER" >> {log}'],
        name="desk",
    )
    with environment:
        for _ in range(2):
            backend = environment.reset(TASK)
            try:
                (display,) = backend.screen.displays()
                assert (display.bounds.width, display.bounds.height) == (640, 480)
            finally:
                backend.close()
    assert log.read_text().splitlines() == [address, address]


def test_a_failing_reset_command_is_an_error_with_its_words(server: VncServer) -> None:
    environment = VncEnvironment(
        f"127.0.0.1::{server.port}",
        password=PASSWORD,
        reset_command=["sh", "-c", "echo 'snapshot missing' >&2; exit 3"],
        name="desk",
    )
    with pytest.raises(VncEnvironmentError, match=r"desk: the reset command .* exited 3: snapshot"):
        environment.reset(TASK)


def test_a_hung_reset_command_is_stopped_and_said(server: VncServer) -> None:
    environment = VncEnvironment(
        f"127.0.0.1::{server.port}", reset_command=["sleep", "30"], reset_timeout_s=0.5
    )
    started = time.monotonic()
    with pytest.raises(VncEnvironmentError, match=r"ran past 0\.5 s"):
        environment.reset(TASK)
    assert time.monotonic() - started < 10


def test_a_refused_password_fails_at_once(server: VncServer) -> None:
    environment = VncEnvironment(
        f"127.0.0.1::{server.port}", password="wrong", connect_timeout_s=60
    )
    started = time.monotonic()
    with pytest.raises(BackendUnavailableError) as refused:
        environment.reset(TASK)
    assert isinstance(refused.value.__cause__, AuthenticationError)
    assert time.monotonic() - started < 10, "a refused password was asked again and again"


def test_the_connection_waits_for_a_server_coming_up(tmp_path: Path) -> None:
    port = free_port()
    environment = VncEnvironment(f"127.0.0.1::{port}", connect_timeout_s=60)
    with contextlib.ExitStack() as stack:
        # The server starts a second after the reset began (a VM reverting).
        later = threading.Timer(1.0, lambda: stack.enter_context(xvnc(320, 240, port=port)))
        later.start()
        try:
            backend = environment.reset(TASK)
        finally:
            later.join()
        (display,) = backend.screen.displays()
        backend.close()
        assert display.bounds.width == 320


def test_no_server_fails_after_the_connect_timeout() -> None:
    environment = VncEnvironment(f"127.0.0.1::{free_port()}", connect_timeout_s=1)
    with pytest.raises(BackendUnavailableError, match="cannot connect to a VNC server"):
        environment.reset(TASK)


def test_a_bad_address_is_refused_when_made() -> None:
    with pytest.raises(ValueError, match="display must be a number"):
        VncEnvironment("host:abc")
