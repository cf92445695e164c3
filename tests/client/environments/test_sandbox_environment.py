"""SandboxEnvironment against the stand-in runtime (conftest.py; no docker or
podman runs here): the sandbox's real entrypoint with real Xvnc, openbox and
xterm, driven through holodesk's VNC backend as a pool would drive a container.

A fresh container for every rollout, behind a password the runtime's argv never
shows; keystrokes land in the container's own terminal; close() and a failed
start leave no container; a container that stops or never gets ready is an
error that quotes what it printed; a missing runtime names every place looked.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from holodesk.client.rollouts.environments import SandboxEnvironment
from holodesk.client.rollouts.environments.containers import (
    RUNTIME_VARIABLE,
    ContainerError,
    ContainerRuntime,
    find_runtime,
)
from holodesk.client.rollouts.trajectory import RolloutTask
from holodesk.platform.errors import BackendUnavailableError
from holodesk.platform.select import open_backend
from holodesk.platform.vnc.errors import AuthenticationError
from tests.client.environments.stand_in import NEVER_READY, StandIn

pytestmark = [pytest.mark.vnc, pytest.mark.timeout(180)]

TASK = RolloutTask("type a command")


def sandbox(stand_in: StandIn, **options: object) -> SandboxEnvironment:
    settings: dict[str, object] = {"apps": "xterm", "width": 800, "height": 600}
    settings.update(options)
    return SandboxEnvironment(runtime=str(stand_in.path), name="sb", **settings)  # type: ignore[arg-type]


def wait_for(path: Path, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


def test_each_rollout_gets_a_fresh_container_driven_over_vnc(stand_in: StandIn) -> None:
    with sandbox(stand_in) as environment:
        backend = environment.reset(TASK)
        try:
            first = environment.container
            (display,) = backend.screen.displays()
            assert (display.bounds.width, display.bounds.height) == (800, 600)
            # The terminal has the keyboard (openbox focuses it): a command typed over
            # VNC runs inside the container, in its own HOME.
            backend.input.type_text("touch typed-over-vnc\n")
            (container,) = stand_in.running()
            wait_for(stand_in.state / str(container["id"]) / "home" / "typed-over-vnc")
        finally:
            backend.close()
        second_backend = environment.reset(TASK)
        second_backend.close()
        assert environment.container != first
        assert [c["id"] for c in stand_in.containers()] == [environment.container]
    assert stand_in.containers() == [], "close() left a container"


def test_vnc_needs_the_password_and_the_runtime_argv_never_holds_it(stand_in: StandIn) -> None:
    with sandbox(stand_in) as environment:
        environment.reset(TASK).close()
        (container,) = stand_in.running()
        with pytest.raises(BackendUnavailableError) as refused:
            open_backend("vnc", host="127.0.0.1", port=int(str(container["port"])), password="")
        assert isinstance(refused.value.__cause__, AuthenticationError)
    (run,) = [call for call in stand_in.calls() if call[0] == "run"]
    assert "SANDBOX_VNC_PASSWORD" in run
    assert not any(arg.startswith("SANDBOX_VNC_PASSWORD=") for arg in run)
    assert run[run.index("--publish") + 1] == "127.0.0.1::5901"


def test_a_container_that_stops_before_it_is_ready_is_an_error_quoting_it(
    stand_in: StandIn,
) -> None:
    # An X server that cannot start: the entrypoint says why and exits.
    environment = sandbox(stand_in, width=0, height=0)
    with environment, pytest.raises(ContainerError) as stopped:
        environment.reset(TASK)
    assert "stopped before it was ready" in str(stopped.value)
    assert "sandbox: error" in str(stopped.value)
    assert stand_in.containers() == [], "the failed container was left"


def test_a_container_never_ready_in_time_is_removed(stand_in: StandIn) -> None:
    environment = SandboxEnvironment(NEVER_READY, runtime=str(stand_in.path), start_timeout_s=1)
    with environment, pytest.raises(ContainerError) as late:
        environment.reset(TASK)
    assert "not ready within 1 s: sandbox: starting" in str(late.value)
    assert stand_in.containers() == []


def test_an_image_the_runtime_lacks_is_its_own_words(stand_in: StandIn) -> None:
    environment = SandboxEnvironment("no/such-image", runtime=str(stand_in.path))
    with environment, pytest.raises(ContainerError) as missing:
        environment.reset(TASK)
    said = str(missing.value)
    assert "Unable to find image 'no/such-image" in said
    assert "build it on this node" in said
    (run,) = [call for call in stand_in.calls() if call[0] == "run"]
    assert run[run.index("--pull") + 1] == "never", "a missing image must not be pulled"


def test_no_runtime_names_every_place_looked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RUNTIME_VARIABLE, raising=False)
    with pytest.raises(ContainerError) as missing:
        find_runtime(environ={"PATH": "/nonexistent"})
    said = str(missing.value)
    assert all(word in said for word in (RUNTIME_VARIABLE, "docker", "podman", "fix:"))
    with pytest.raises(ContainerError, match=f"set by {RUNTIME_VARIABLE}"):
        find_runtime(environ={"PATH": "/nonexistent", RUNTIME_VARIABLE: "dockerish"})
    environment = SandboxEnvironment(runtime="/nonexistent/docker")
    with pytest.raises(ContainerError, match="'/nonexistent/docker' \\(given\\)"):
        environment.start()


def test_removing_a_container_already_gone_is_no_error(stand_in: StandIn) -> None:
    runtime = ContainerRuntime(str(stand_in.path))
    runtime.remove("0123456789ab")  # the runtime says "No such container": no error
    assert stand_in.calls()[-1] == ["rm", "--force", "0123456789ab"]
